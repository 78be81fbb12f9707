//! The classification behind `Reader::u32_list` (msgpack.rs): token ids are read two per
//! dependent step once every byte of a chunk is known as the length a token whose marker it is
//! would take (and that token's and the next one's together), found 16 bytes at a time.

/// For each byte, the length of a token id whose marker it would be in the usual encodings:
/// 1 (positive fixint), 2 (uint8), 3 (uint16), 5 (uint32); 0 for anything else.
#[inline(always)]
fn token_length(b: u8) -> u8 {
  ((b < 0x80) as u8) | (((b == 0xcc) as u8) * 2) | (((b == 0xcd) as u8) * 3) | (((b == 0xce) as u8) * 5)
}

/// `token_length` of every byte of `src` into `dst` (at least as long).
#[inline]
pub fn token_lengths(src: &[u8], dst: &mut [u8]) {
  let dst = &mut dst[..src.len()];
  let mut done = 0;
  #[cfg(target_arch = "x86_64")]
  {
    use std::arch::x86_64::*;
    // SSE2 is part of x86_64: 16 bytes classified in a few instructions.
    // SAFETY: loads and stores of 16 bytes within `src` and `dst` (same length).
    unsafe {
      let (cc, cd, ce) = (_mm_set1_epi8(0xccu8 as i8), _mm_set1_epi8(0xcdu8 as i8), _mm_set1_epi8(0xceu8 as i8));
      let (one, two, three, five, minus_one) = (_mm_set1_epi8(1), _mm_set1_epi8(2), _mm_set1_epi8(3), _mm_set1_epi8(5), _mm_set1_epi8(-1));
      while done + 16 <= src.len() {
        let v = _mm_loadu_si128(src.as_ptr().add(done) as *const __m128i);
        let fixint = _mm_and_si128(_mm_cmpgt_epi8(v, minus_one), one);
        let u8_16 = _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(v, cc), two), _mm_and_si128(_mm_cmpeq_epi8(v, cd), three));
        let l = _mm_or_si128(_mm_or_si128(fixint, u8_16), _mm_and_si128(_mm_cmpeq_epi8(v, ce), five));
        _mm_storeu_si128(dst.as_mut_ptr().add(done) as *mut __m128i, l);
        done += 16;
      }
    }
  }
  for (d, &b) in dst[done..].iter_mut().zip(&src[done..]) {
    *d = token_length(b);
  }
}

/// Bytes classified at a time by `u32_list`.
pub const CHUNK: usize = 256;

/// The token of length `l` (1, 2, 3 or 5) whose marker is at `at`.
///
/// # Safety
/// `at + 8 <= buf.len()`.
#[inline(always)]
pub unsafe fn token_at(buf: &[u8], at: usize, l: usize) -> u32 {
  debug_assert!(at + 8 <= buf.len());
  // SAFETY: 8 bytes from `at` are in `buf` (the caller's promise); read unaligned.
  let w = u64::from_be(unsafe { (buf.as_ptr().add(at) as *const u64).read_unaligned() });
  // 1 byte: the marker is the value; else the l - 1 bytes after it.
  if l == 1 {
    (w >> 56) as u32
  } else {
    (w << 8).wrapping_shr(72 - 8 * l as u32) as u32
  }
}

/// For the first `len` positions p of `lens` (token lengths, `token_lengths`): the length of the
/// token at p and of the one after it, `lens[p] + lens[p + lens[p]]` (0 where lens[p] is 0).
/// `lens` holds 48 bytes past `len` (16-byte loads may read past what was classified: those
/// lanes are past `len` and never used).
#[inline]
pub fn pair_lengths(lens: &[u8], len: usize, pairs: &mut [u8]) {
  assert!(lens.len() >= len.next_multiple_of(16) + 21 && pairs.len() >= len.next_multiple_of(16));
  #[cfg(target_arch = "x86_64")]
  {
    use std::arch::x86_64::*;
    let mut p = 0;
    // SAFETY: 16-byte loads at p..p + 5 + 16 within `lens` and stores within `pairs` (asserted).
    unsafe {
      let load = |at: usize| _mm_loadu_si128(lens.as_ptr().add(at) as *const __m128i);
      let (one, two, three, five) = (_mm_set1_epi8(1), _mm_set1_epi8(2), _mm_set1_epi8(3), _mm_set1_epi8(5));
      while p < len {
        let l = load(p);
        let after = _mm_or_si128(
          _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(l, one), load(p + 1)), _mm_and_si128(_mm_cmpeq_epi8(l, two), load(p + 2))),
          _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(l, three), load(p + 3)), _mm_and_si128(_mm_cmpeq_epi8(l, five), load(p + 5))),
        );
        _mm_storeu_si128(pairs.as_mut_ptr().add(p) as *mut __m128i, _mm_add_epi8(l, after));
        p += 16;
      }
    }
  }
  #[cfg(not(target_arch = "x86_64"))]
  for p in 0..len {
    let l = lens[p] as usize;
    pairs[p] = if l == 0 { 0 } else { (l + lens[p + l] as usize) as u8 };
  }
}

#[cfg(test)]
mod tests {
  use super::super::msgpack::{Int, Reader};

  /// Token lists of every usual width, long enough to cross the chunks of the fast path, with
  /// the other integer encodings (read on the careful path) and a bad value at every position:
  /// with the AVX-512 windows where the CPU has them, and without.
  #[test]
  fn u32_lists_read_every_encoding_across_chunks() {
    u32_lists_read_every_encoding(7);
    super::super::token_windows::OFF_IN_TEST.with(|off| off.set(true));
    u32_lists_read_every_encoding(8);
    super::super::token_windows::OFF_IN_TEST.with(|off| off.set(false));
  }

  fn u32_lists_read_every_encoding(seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for case in 0..300 {
      let n = rng.usize(..700);
      let mut want = Vec::with_capacity(n);
      let mut bytes = Vec::new();
      let bad = (case % 3 == 0 && n > 0).then(|| rng.usize(..n));
      for i in 0..n {
        if Some(i) == bad {
          bytes.extend_from_slice(&[0xd0, 0xff]); // int8 -1: not a token id
          continue;
        }
        let v = match rng.u8(..5) {
          0 => rng.u32(..0x80),
          1 => rng.u32(0x80..0x100),
          2 => rng.u32(0x100..0x10000),
          _ => rng.u32(0x10000..),
        };
        want.push(v);
        match rng.u8(..20) {
          // Wider than needed (legal msgpack): uint64, or int32 for small values.
          0 => bytes.extend_from_slice(&[&[0xcf][..], &(v as u64).to_be_bytes()].concat()),
          1 if v < 0x8000_0000 => bytes.extend_from_slice(&[&[0xd2][..], &(v as i32).to_be_bytes()].concat()),
          _ => drop(rmp::encode::write_uint(&mut bytes, v as u64).unwrap()),
        }
      }
      // Whatever follows the list (the fast path may look at these bytes, never take them).
      let tail = rng.usize(..10);
      bytes.extend(std::iter::repeat_n(0xce, tail));
      let mut r = Reader::new(&bytes);
      let mut out = vec![42];
      let got = r.u32_list(n as u32, &mut out);
      match bad {
        Some(b) => {
          assert_eq!(got, Err(b as u32), "case {case}");
          assert_eq!(out[1..], want[..b], "case {case}");
          assert_eq!(r.int().unwrap(), Some(Int::I(-1)), "the reader is left at the bad value");
        }
        None => {
          assert_eq!(got, Ok(()), "case {case}");
          assert_eq!(out[0], 42, "appended");
          assert_eq!(out[1..], want[..], "case {case}");
          assert_eq!(r.left(), tail);
        }
      }
    }
  }

  /// Random token lists in the two integer encodings of PROTOCOLS.md section 2 (unsigned, as
  /// vLLM's msgpack writes them; signed int8-int64, as SGLang's may), in the smallest width or
  /// wider, mixed within a list, with bad values (negative, past 2^32, nil, a float) and other
  /// msgpack around them: the list reader (blocks where the CPU has them, and without) against a
  /// plain reader of one integer at a time (the `rmp` crate's).
  #[test]
  fn u32_lists_read_what_a_plain_reader_reads() {
    for off in [false, true] {
      super::super::token_windows::OFF_IN_TEST.with(|o| o.set(off));
      let mut rng = fastrand::Rng::with_seed(21 + off as u64);
      for case in 0..400 {
        let n = rng.usize(..1500);
        let encoding = case % 3; // 0: unsigned, 1: signed, 2: either, element by element
        let mut bytes = Vec::new();
        // Other msgpack before the list: a string, a map.
        rmp::encode::write_str(&mut bytes, &"k".repeat(rng.usize(..40))).unwrap();
        rmp::encode::write_map_len(&mut bytes, 0).unwrap();
        let list_at = bytes.len();
        rmp::encode::write_array_len(&mut bytes, n as u32).unwrap();
        for _ in 0..n {
          let v: u64 = match rng.u8(..6) {
            0 => rng.u64(..0x80),
            1 => rng.u64(0x80..0x100),
            2 => rng.u64(0x100..0x1_0000),
            3 => rng.u64(0x1_0000..0x8000_0000),
            _ => rng.u64(0x8000_0000..0x1_0000_0000),
          };
          let signed = encoding == 1 || (encoding == 2 && rng.bool());
          match rng.u16(..if case % 4 == 0 { 400 } else { 40_000 }) {
            0 => drop(rmp::encode::write_sint(&mut bytes, -(rng.i64(1..1 << 40))).unwrap()),
            1 => drop(rmp::encode::write_uint(&mut bytes, rng.u64(1 << 32..)).unwrap()),
            2 => rmp::encode::write_nil(&mut bytes).unwrap(),
            3 => rmp::encode::write_f64(&mut bytes, v as f64).unwrap(),
            // Wider than needed, now and then (legal msgpack).
            4..=40 if signed => bytes.extend_from_slice(&[&[0xd3][..], &(v as i64).to_be_bytes()].concat()),
            4..=40 => bytes.extend_from_slice(&[&[0xcf][..], &v.to_be_bytes()].concat()),
            _ if signed => write_signed(&mut bytes, v as i64),
            _ => drop(rmp::encode::write_uint(&mut bytes, v).unwrap()),
          }
        }
        // Other msgpack after it (fields that follow token_ids).
        rmp::encode::write_uint(&mut bytes, 16).unwrap();
        rmp::encode::write_nil(&mut bytes).unwrap();
        rmp::encode::write_str(&mut bytes, "GPU").unwrap();

        // The plain reader: the count, then one integer at a time.
        let mut plain = &bytes[list_at..];
        let count = rmp::decode::read_array_len(&mut plain).unwrap() as usize;
        let (mut want, mut bad) = (Vec::new(), None);
        for i in 0..count {
          let before = plain;
          match rmp::decode::read_int::<u32, _>(&mut plain) {
            Ok(v) => want.push(v),
            Err(_) => {
              plain = before;
              bad = Some(i as u32);
              break;
            }
          }
        }
        let end = bytes.len() - plain.len();

        let mut r = Reader::at(&bytes, list_at);
        let mut out = Vec::new();
        let got = super::super::fields::token_list(&mut r, &mut out);
        match bad {
          None => assert!(got.is_ok(), "case {case}"),
          Some(i) => {
            assert!(got.is_err(), "case {case}: the value at {i} is no token id");
            // The reader stopped at the bad value, after the ids before it.
            let mut again = Reader::at(&bytes, list_at);
            let n = again.array().unwrap().unwrap();
            let mut before = Vec::new();
            assert_eq!(again.u32_list(n, &mut before), Err(i), "case {case}");
            assert_eq!(before, want, "case {case}");
            assert_eq!(again.at, end, "case {case}");
            continue;
          }
        }
        assert_eq!(out, want, "case {case} (encoding {encoding}, blocks off: {off})");
        assert_eq!(r.at, end, "case {case}");
      }
    }
    super::super::token_windows::OFF_IN_TEST.with(|o| o.set(false));
  }

  /// A non-negative value in the smallest signed encoding: positive fixint, then int8 to int64.
  fn write_signed(out: &mut Vec<u8>, v: i64) {
    match v {
      0..=0x7f => out.push(v as u8),
      _ if v <= i16::MAX as i64 => out.extend_from_slice(&[&[0xd1][..], &(v as i16).to_be_bytes()].concat()),
      _ if v <= i32::MAX as i64 => out.extend_from_slice(&[&[0xd2][..], &(v as i32).to_be_bytes()].concat()),
      _ => out.extend_from_slice(&[&[0xd3][..], &v.to_be_bytes()].concat()),
    }
  }

  #[test]
  fn u32_lists_cut_short() {
    // Cut short: a uint32 missing its last byte.
    let mut r = Reader::new(&[0x01, 0xce, 0, 0, 1]);
    let mut out = Vec::new();
    assert_eq!(r.u32_list(2, &mut out), Err(1));
    assert_eq!((out, r.at), (vec![1], 1));
  }
}
