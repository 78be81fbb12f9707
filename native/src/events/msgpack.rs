//! A msgpack reader over a byte slice: markers classified by the `rmp` crate, values read in
//! place (strings and byte strings borrowed, never copied). Errors are plain messages; the
//! decoder adds where in the payload they happened.

use rmp::Marker;

use super::token_lengths::{pair_lengths, token_at, token_lengths, CHUNK};
use super::token_windows;

pub type ReadResult<T> = Result<T, String>;

/// Marks a byte whose value's size is not fixed by the byte alone.
const VARIABLE: u8 = 0xff;

/// For each first byte: the bytes that follow it when the value is a fixed-size scalar.
const FIXED_EXTRA: [u8; 256] = {
  let mut t = [VARIABLE; 256];
  let mut b = 0;
  while b < 256 {
    t[b] = match b as u8 {
      0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 0,
      0xcc | 0xd0 => 1,
      0xcd | 0xd1 => 2,
      0xce | 0xd2 | 0xca => 4,
      0xcf | 0xd3 | 0xcb => 8,
      0xd4 => 2,
      0xd5 => 3,
      0xd6 => 5,
      0xd7 => 9,
      0xd8 => 17,
      _ => VARIABLE,
    };
    b += 1;
  }
  t
};

/// An integer as msgpack carries it (uint64 and int64 both exist on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int {
  U(u64),
  I(i64),
}

impl Int {
  /// The same 64 bits, unsigned (int64 engine hashes keep their bits).
  pub fn bits(self) -> u64 {
    match self {
      Int::U(v) => v,
      Int::I(v) => v as u64,
    }
  }

  /// The value when it is in 0..=max.
  pub fn in_range(self, max: u64) -> Option<u64> {
    match self {
      Int::U(v) if v <= max => Some(v),
      Int::I(v) if v >= 0 && v as u64 <= max => Some(v as u64),
      _ => None,
    }
  }
}

#[derive(Clone)]
pub struct Reader<'a> {
  buf: &'a [u8],
  pub at: usize,
}

impl<'a> Reader<'a> {
  pub fn new(buf: &'a [u8]) -> Self {
    Self { buf, at: 0 }
  }

  pub fn at(buf: &'a [u8], at: usize) -> Self {
    Self { buf, at }
  }

  pub fn is_done(&self) -> bool {
    self.at >= self.buf.len()
  }

  /// Bytes after the reader.
  pub fn left(&self) -> usize {
    self.buf.len().saturating_sub(self.at)
  }

  /// The bytes read.
  pub fn buf(&self) -> &'a [u8] {
    self.buf
  }

  fn take(&mut self, n: usize) -> ReadResult<&'a [u8]> {
    let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or_else(|| "truncated msgpack".to_string())?;
    let s = &self.buf[self.at..end];
    self.at = end;
    Ok(s)
  }

  fn be(&mut self, n: usize) -> ReadResult<u64> {
    Ok(self.take(n)?.iter().fold(0u64, |acc, &b| acc << 8 | b as u64))
  }

  pub fn peek(&self) -> ReadResult<Marker> {
    self.buf.get(self.at).map(|&b| Marker::from_u8(b)).ok_or_else(|| "truncated msgpack".to_string())
  }

  fn marker(&mut self) -> ReadResult<Marker> {
    let m = self.peek()?;
    self.at += 1;
    Ok(m)
  }

  /// Consumes a nil if one is next.
  pub fn nil(&mut self) -> ReadResult<bool> {
    if self.peek()? == Marker::Null {
      self.at += 1;
      return Ok(true);
    }
    Ok(false)
  }

  /// An integer, or None (nothing consumed) when the next value is not one.
  pub fn int(&mut self) -> ReadResult<Option<Int>> {
    let v = match self.peek()? {
      Marker::FixPos(v) => {
        self.at += 1;
        return Ok(Some(Int::U(v as u64)));
      }
      Marker::FixNeg(v) => {
        self.at += 1;
        return Ok(Some(Int::I(v as i64)));
      }
      Marker::U8 => (1, false),
      Marker::U16 => (2, false),
      Marker::U32 => (4, false),
      Marker::U64 => (8, false),
      Marker::I8 => (1, true),
      Marker::I16 => (2, true),
      Marker::I32 => (4, true),
      Marker::I64 => (8, true),
      _ => return Ok(None),
    };
    self.at += 1;
    let raw = self.be(v.0)?;
    Ok(Some(if v.1 {
      let shift = 64 - 8 * v.0 as u32;
      Int::I(((raw << shift) as i64) >> shift)
    } else {
      Int::U(raw)
    }))
  }

  /// A number (float or integer), or None when the next value is not one.
  pub fn number(&mut self) -> ReadResult<Option<f64>> {
    match self.peek()? {
      Marker::F32 => {
        self.at += 1;
        Ok(Some(f32::from_bits(self.be(4)? as u32) as f64))
      }
      Marker::F64 => {
        self.at += 1;
        Ok(Some(f64::from_bits(self.be(8)?)))
      }
      _ => Ok(self.int()?.map(|i| match i {
        Int::U(v) => v as f64,
        Int::I(v) => v as f64,
      })),
    }
  }

  /// A string, or None when the next value is not one.
  pub fn str(&mut self) -> ReadResult<Option<&'a str>> {
    let n = match self.peek()? {
      Marker::FixStr(n) => {
        self.at += 1;
        n as usize
      }
      Marker::Str8 => {
        self.at += 1;
        self.be(1)? as usize
      }
      Marker::Str16 => {
        self.at += 1;
        self.be(2)? as usize
      }
      Marker::Str32 => {
        self.at += 1;
        self.be(4)? as usize
      }
      _ => return Ok(None),
    };
    let bytes = self.take(n)?;
    std::str::from_utf8(bytes).map(Some).map_err(|_| "a string that is not UTF-8".to_string())
  }

  /// A byte string, or None when the next value is not one.
  pub fn bin(&mut self) -> ReadResult<Option<&'a [u8]>> {
    let n = match self.peek()? {
      Marker::Bin8 => 1,
      Marker::Bin16 => 2,
      Marker::Bin32 => 4,
      _ => return Ok(None),
    };
    self.at += 1;
    let len = self.be(n)? as usize;
    self.take(len).map(Some)
  }

  /// An array's length, or None when the next value is not an array.
  pub fn array(&mut self) -> ReadResult<Option<u32>> {
    let n = match self.peek()? {
      Marker::FixArray(n) => {
        self.at += 1;
        return Ok(Some(n as u32));
      }
      Marker::Array16 => 2,
      Marker::Array32 => 4,
      _ => return Ok(None),
    };
    self.at += 1;
    Ok(Some(self.be(n)? as u32))
  }

  /// A map's entry count, or None when the next value is not a map.
  pub fn map(&mut self) -> ReadResult<Option<u32>> {
    let n = match self.peek()? {
      Marker::FixMap(n) => {
        self.at += 1;
        return Ok(Some(n as u32));
      }
      Marker::Map16 => 2,
      Marker::Map32 => 4,
      _ => return Ok(None),
    };
    self.at += 1;
    Ok(Some(self.be(n)? as u32))
  }

  /// Skips one value, however nested (iteratively: no recursion for hostile nesting). Scalars of
  /// a fixed size are skipped by a table lookup: payloads are mostly integers.
  pub fn skip(&mut self) -> ReadResult<()> {
    let buf = self.buf;
    let mut at = self.at;
    let mut pending: u64 = 1;
    while pending > 0 {
      let Some(&b) = buf.get(at) else { return Err("truncated msgpack".into()) };
      at += 1;
      pending -= 1;
      let fixed = FIXED_EXTRA[b as usize];
      if fixed != VARIABLE {
        at += fixed as usize;
        continue;
      }
      self.at = at - 1;
      let m = self.marker()?;
      let skip = match m {
        Marker::Reserved => return Err("the reserved msgpack byte 0xc1".into()),
        Marker::FixStr(n) => n as usize,
        Marker::Str8 | Marker::Bin8 => self.be(1)? as usize,
        Marker::Str16 | Marker::Bin16 => self.be(2)? as usize,
        Marker::Str32 | Marker::Bin32 => self.be(4)? as usize,
        Marker::Ext8 => self.be(1)? as usize + 1,
        Marker::Ext16 => self.be(2)? as usize + 1,
        Marker::Ext32 => self.be(4)? as usize + 1,
        Marker::FixArray(n) => {
          pending += n as u64;
          0
        }
        Marker::Array16 => {
          pending += self.be(2)?;
          0
        }
        Marker::Array32 => {
          pending += self.be(4)?;
          0
        }
        Marker::FixMap(n) => {
          pending += 2 * n as u64;
          0
        }
        Marker::Map16 => {
          pending += 2 * self.be(2)?;
          0
        }
        Marker::Map32 => {
          pending += 2 * self.be(4)?;
          0
        }
        _ => unreachable!("fixed-size markers are in the table"),
      };
      self.take(skip)?;
      at = self.at;
      // A count larger than the bytes left cannot be honest: stop before looping on it.
      if pending > buf.len().saturating_sub(at) as u64 {
        return Err("truncated msgpack".into());
      }
    }
    if at > buf.len() {
      return Err("truncated msgpack".into());
    }
    self.at = at;
    Ok(())
  }

  /// An integer's 64 bits (as `int().bits()`) when it is a positive fixint, uint32, uint64 or
  /// int64 with all its bytes there (engines' hashes); None, nothing consumed, otherwise.
  #[inline]
  pub fn uint_bits(&mut self) -> Option<u64> {
    let buf = self.buf;
    let at = self.at;
    let (v, len) = match *buf.get(at)? {
      b @ 0..=0x7f => (b as u64, 1),
      0xcf | 0xd3 => (u64::from_be_bytes(buf.get(at + 1..at + 9)?.try_into().ok()?), 9),
      0xce => (u32::from_be_bytes(buf.get(at + 1..at + 5)?.try_into().ok()?) as u64, 5),
      _ => return None,
    };
    self.at = at + len;
    Some(v)
  }

  /// A token id (an integer in 0..2^32), read on a fast path for the usual encodings.
  #[inline]
  pub fn u32(&mut self) -> ReadResult<Option<u32>> {
    let buf = self.buf;
    let at = self.at;
    match buf.get(at) {
      Some(&b) if b < 0x80 => {
        self.at = at + 1;
        Ok(Some(b as u32))
      }
      Some(0xcc) if at + 2 <= buf.len() => {
        self.at = at + 2;
        Ok(Some(buf[at + 1] as u32))
      }
      Some(0xcd) if at + 3 <= buf.len() => {
        self.at = at + 3;
        Ok(Some(u16::from_be_bytes([buf[at + 1], buf[at + 2]]) as u32))
      }
      Some(0xce) if at + 5 <= buf.len() => {
        self.at = at + 5;
        Ok(Some(u32::from_be_bytes([buf[at + 1], buf[at + 2], buf[at + 3], buf[at + 4]])))
      }
      _ => Ok(self.int()?.and_then(|i| i.in_range(u32::MAX as u64)).map(|v| v as u32)),
    }
  }

  /// `n` token ids appended to `out`. Err(i) when the i-th is not an integer in 0..2^32 (or is
  /// cut short), with the reader at it.
  ///
  /// Where a token starts depends on where the one before it ended, so reading them is a chain
  /// of dependent steps. It is kept to one load and one add per two tokens: every byte of a
  /// chunk is first classified (the length of a token whose marker it would be, and of it and
  /// the token after it: `token_lengths`, `pair_lengths`, 16 bytes at a time and off the chain),
  /// then the reader hops from marker to marker two tokens at a time. With AVX-512 VBMI, 64-byte
  /// blocks come first, one dependent step each (token_windows.rs).
  pub fn u32_list(&mut self, n: u32, out: &mut Vec<u32>) -> Result<(), u32> {
    let n = n as usize;
    let first = out.len();
    // Every value takes a byte at least: a count beyond the bytes left fails below. Written in
    // place with the count in a register (a push per token would chain through the Vec's length).
    out.resize(first + n.min(self.left()), 0);
    let buf = self.buf;
    let dst = &mut out[first..];
    // Markers from which 8 bytes can be loaded (the widest usual encoding takes 5).
    let fast_end = buf.len().saturating_sub(7);
    let mut at = self.at;
    let mut i = 0;
    if token_windows::available() {
      // 64-byte blocks of the list where the CPU can (token_windows.rs); what they leave (the
      // last 128 bytes, other encodings) goes on below.
      // SAFETY: the CPU has the features; `buf` has the bytes from `at` given; the blocks write
      // at most dst.len() values from dst[0].
      let (read, used) = unsafe { token_windows::blocks(buf.as_ptr().add(at), buf.len() - at, dst.as_mut_ptr(), dst.len()) };
      i = read;
      at += used;
    }
    // Lengths of the chunk's bytes and of the 8 after it (the token after the chunk's last),
    // with room for the 16-byte loads of pair_lengths past them.
    let mut lens = [0u8; CHUNK + 48];
    let mut pairs = [0u8; CHUNK + 16];
    'chunks: while i < dst.len() && at < fast_end {
      let base = at;
      let end = (base + CHUNK).min(fast_end);
      token_lengths(&buf[base..(end + 8).min(buf.len())], &mut lens);
      pair_lengths(&lens, end - base, &mut pairs);
      // Unchecked indexing: at < end <= fast_end (so p < CHUNK and 8 bytes from `at` are in
      // `buf`) and i < dst.len() hold at the top of every turn; the checks would be most of
      // the instructions per token.
      loop {
        let p = at - base;
        debug_assert!(p < CHUNK && at < fast_end && i < dst.len());
        // SAFETY: the invariants above.
        let (la, two) = unsafe { (*lens.get_unchecked(p) as usize, *pairs.get_unchecked(p) as usize) };
        if la == 0 {
          break 'chunks; // another encoding (or not an integer): the careful path below
        }
        // SAFETY: the invariants above.
        unsafe { *dst.get_unchecked_mut(i) = token_at(buf, at, la) };
        let next = at + la;
        let lb = two - la;
        i += 1;
        if lb == 0 || i == dst.len() || next >= fast_end {
          at = next;
          break 'chunks;
        }
        // SAFETY: next < fast_end and i < dst.len(), just checked.
        unsafe { *dst.get_unchecked_mut(i) = token_at(buf, next, lb) };
        i += 1;
        at = next + lb;
        if i == dst.len() || at >= end {
          break;
        }
      }
    }
    out.truncate(first + i);
    self.at = at;
    // The last few bytes, and the other integer encodings.
    while i < n {
      let before = self.at;
      match self.u32() {
        Ok(Some(v)) => out.push(v),
        _ => {
          self.at = before;
          return Err(i as u32);
        }
      }
      i += 1;
    }
    Ok(())
  }

  /// What the next value is, for messages (static: readers call it before knowing they fail).
  pub fn describe(&self) -> &'static str {
    match self.peek() {
      Err(_) => "nothing",
      Ok(m) => match m {
        Marker::Null => "nil",
        Marker::True | Marker::False => "a boolean",
        Marker::F32 | Marker::F64 => "a float",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "bytes",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "a list",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
        Marker::FixPos(_) | Marker::FixNeg(_) | Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => "an integer",
        Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => "an integer",
        _ => "an extension value",
      },
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn reads_every_integer_width_and_sign() {
    let bytes = [
      0x05, 0xe0, 0xcc, 0xff, 0xcd, 0x01, 0x00, 0xce, 0, 1, 0, 0, 0xcf, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78, 0xd0, 0x80, 0xd3, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff, 0xfe,
    ];
    let mut r = Reader::new(&bytes);
    let want = [Int::U(5), Int::I(-32), Int::U(255), Int::U(256), Int::U(65536), Int::U(0xdead_beef_1234_5678), Int::I(-128), Int::I(-2)];
    for w in want {
      assert_eq!(r.int().unwrap(), Some(w));
    }
    assert!(r.is_done());
    assert_eq!(Int::I(-2).bits(), u64::MAX - 1);
    assert_eq!(Int::I(-1).in_range(10), None);
  }

  #[test]
  fn uint_bits_agrees_with_int() {
    let bytes =
      [0x05, 0xce, 0, 1, 0, 0, 0xcf, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78, 0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xcd, 1, 0, 0xcf, 1];
    let mut r = Reader::new(&bytes);
    for want in [5u64, 65536, 0xdead_beef_1234_5678, u64::MAX - 1] {
      let mut slow = r.clone();
      assert_eq!(r.uint_bits(), Some(want));
      assert_eq!(slow.int().unwrap().map(Int::bits), Some(want));
      assert_eq!(slow.at, r.at);
    }
    // uint16 goes the general way; a cut uint64 is left alone.
    assert_eq!((r.uint_bits(), r.int().unwrap()), (None, Some(Int::U(256))));
    assert_eq!((r.uint_bits(), r.at), (None, bytes.len() - 2));
  }

  #[test]
  fn skips_nested_values_and_refuses_lies() {
    // [1, {"a": [nil, "xy"]}, b"\x01\x02"] then 7
    let bytes = [0x93, 0x01, 0x81, 0xa1, b'a', 0x92, 0xc0, 0xa2, b'x', b'y', 0xc4, 0x02, 1, 2, 0x07];
    let mut r = Reader::new(&bytes);
    r.skip().unwrap();
    assert_eq!(r.int().unwrap(), Some(Int::U(7)));
    // An array claiming 2^32 - 1 elements in 5 bytes.
    assert!(Reader::new(&[0xdd, 0xff, 0xff, 0xff, 0xff]).skip().is_err());
    assert!(Reader::new(&[0xa5, b'a']).skip().is_err());
    assert!(Reader::new(&[0xc1]).skip().is_err());
  }
}
