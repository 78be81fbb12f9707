//! Token ids read a 64-byte block at a time where the CPU has AVX-512 VBMI (byte permutes across
//! a 64-byte register), for `Reader::u32_list` (msgpack.rs).
//!
//! Where a token starts depends on where the one before ended: read one after the other, the
//! reading is a chain of dependent steps. Here the list's bytes are cut into 64-byte blocks at
//! fixed offsets, and all of a block's work that does not depend on where its first token starts
//! is done off the chain: every byte classified as "where the token after a token starting here
//! would start" (`m1`, positions past the block kept as they are), and that map composed with
//! itself by permutes (`m2` .. `m32`, and `m64`: from any position of the block, where the first
//! token starting past the block starts). The only step from one block to the next is then one
//! byte looked up in `m64` (the entry into the next block is 0-4 bytes past its start), so the
//! CPU runs the classification, the starts and the values of several blocks at once. Given its
//! entry, a block's token starts come out of six masked permutes (token j starts at m^j(entry),
//! from the bits of j) and the values out of two more permutes per 16 tokens.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Bytes a block's tokens start in: tokens starting in it end by byte 124 (the block and the
/// next 8 bytes fit one 128-byte table of two registers), and 127 is free for "no token here".
pub const BLOCK_BYTES: usize = 120;
/// Readable bytes a block needs from its start.
pub const READ_BYTES: usize = 128;

#[cfg(test)]
thread_local! {
  /// Set by a test to run the portable path on a CPU that has the windows.
  pub static OFF_IN_TEST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this CPU runs `blocks`.
#[inline]
pub fn available() -> bool {
  #[cfg(test)]
  if OFF_IN_TEST.with(|off| off.get()) {
    return false;
  }
  #[cfg(target_arch = "x86_64")]
  {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vbmi")
  }
  #[cfg(not(target_arch = "x86_64"))]
  false
}

/// 0, 1, .. 63 plus `add` in each byte.
const fn iota(add: u8) -> [u8; 64] {
  let mut a = [0u8; 64];
  let mut i = 0;
  while i < 64 {
    a[i] = i as u8 + add;
    i += 1;
  }
  a
}

/// Reads up to `room` token ids in the usual encodings (positive fixint, uint8, uint16, uint32)
/// chained from `src[0]`, a block at a time while a block has 128 readable bytes, into `dst`.
/// Stops at the first byte chained to that is no such marker, after `room` tokens, or at a token
/// starting past `len - 128`. Returns (tokens read, bytes they took).
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI (`available`); `src` has `len` readable bytes and `dst`
/// room for `room` u32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub unsafe fn blocks(src: *const u8, len: usize, dst: *mut u32, room: usize) -> (usize, usize) {
  /// Token lengths by marker byte from 0xc0: uint8 2, uint16 3, uint32 5 (fixints apart).
  const MARKER_LENGTHS: [u8; 64] = {
    let mut a = [0u8; 64];
    a[0x0c] = 2;
    a[0x0d] = 3;
    a[0x0e] = 5;
    a
  };
  // Byte 4j + b of a values register: the lane of token j of its group of 16, and b.
  const LANE_OF: [[u8; 64]; 4] = {
    let mut a = [[0u8; 64]; 4];
    let mut g = 0;
    while g < 4 {
      let mut i = 0;
      while i < 64 {
        a[g][i] = (16 * g + i / 4) as u8;
        i += 1;
      }
      g += 1;
    }
    a
  };
  const BYTE_OF: [u8; 64] = {
    let mut a = [0u8; 64];
    let mut i = 0;
    while i < 64 {
      a[i] = (i % 4) as u8;
      i += 1;
    }
    a
  };
  /// No token starts here: a fixed point, so the chain stops.
  const NONE: u8 = 127;
  /// Positions past the block (120..127) map to themselves.
  const PAST_LANES: u64 = 0xFF00_0000_0000_0000;
  // Lanes of the starts register taking the power 2^k of the map: those whose index has bit k.
  const BITS: [u64; 6] =
    [0xAAAA_AAAA_AAAA_AAAA, 0xCCCC_CCCC_CCCC_CCCC, 0xF0F0_F0F0_F0F0_F0F0, 0xFF00_FF00_FF00_FF00, 0xFFFF_0000_FFFF_0000, 0xFFFF_FFFF_0000_0000];
  // SAFETY: the caller's promises (features, `len` readable bytes, `room` u32 in `dst`); every
  // block loads 128 bytes from a base with base + 128 <= len; constant tables are 64 bytes.
  unsafe {
    let load = |p: *const u8| _mm512_loadu_si512(p as *const __m512i);
    const IOTA_LO: [u8; 64] = iota(0);
    const IOTA_HI: [u8; 64] = iota(64);
    let iota_lo = load(IOTA_LO.as_ptr());
    let iota_hi = load(IOTA_HI.as_ptr());
    let marker_lengths = load(MARKER_LENGTHS.as_ptr());
    let byte_of = load(BYTE_OF.as_ptr());
    let one = _mm512_set1_epi8(1);
    let none = _mm512_set1_epi8(NONE as i8);
    let block_end = _mm512_set1_epi8(BLOCK_BYTES as i8);
    // m32 of the block being read, in memory: the next entry is one byte load from it.
    let mut jumps = [0u8; 128];
    let (mut starts_at, mut lengths_at) = ([0u8; 64], [0u8; 64]);
    let (mut base, mut entry, mut read) = (0usize, 0usize, 0usize);
    while read < room && base + READ_BYTES <= len {
      let w = [load(src.add(base)), load(src.add(base + 64))];
      // Token lengths by marker: 1, 2, 3, 5; 0 for anything else.
      let lengths = |w: __m512i| {
        let high = _mm512_cmpge_epu8_mask(w, _mm512_set1_epi8(0xc0u8 as i8));
        let l = _mm512_maskz_permutexvar_epi8(high, w, marker_lengths);
        _mm512_mask_mov_epi8(l, _mm512_cmplt_epu8_mask(w, _mm512_set1_epi8(0x80u8 as i8)), one)
      };
      let lens = [lengths(w[0]), lengths(w[1])];
      // The map and its powers over the 128 positions (two registers), off the chain: they
      // depend on the block's bytes only.
      let next = |l: __m512i, iota: __m512i| _mm512_mask_add_epi8(none, _mm512_test_epi8_mask(l, l), iota, l);
      let mut powers = [[next(lens[0], iota_lo), _mm512_mask_mov_epi8(next(lens[1], iota_hi), PAST_LANES, iota_hi)]; 6];
      for k in 1..6 {
        let [lo, hi] = powers[k - 1];
        powers[k] = [_mm512_permutex2var_epi8(lo, lo, hi), _mm512_permutex2var_epi8(lo, hi, hi)];
      }
      _mm512_storeu_si512(jumps.as_mut_ptr() as *mut __m512i, powers[5][0]);
      _mm512_storeu_si512(jumps.as_mut_ptr().add(64) as *mut __m512i, powers[5][1]);
      // The chain: where this block's first token starts (0-4: the last one before may end
      // past the block's start). Past the block after 32 tokens but for blocks of small ones.
      let jump = jumps[entry];
      let wide = jump < BLOCK_BYTES as u8;
      let mut starts = _mm512_set1_epi8(entry as i8);
      for k in 0..5 {
        starts = _mm512_mask2_permutex2var_epi8(powers[k][0], starts, BITS[k], powers[k][1]);
      }
      let mut lanes = u32::MAX as u64;
      if wide {
        starts = _mm512_mask2_permutex2var_epi8(powers[5][0], starts, BITS[5], powers[5][1]);
        lanes = u64::MAX;
      }
      // Tokens starting in the block: starts only grow, and stay once past it (or at NONE,
      // whose start is no token).
      let lens_at = _mm512_permutex2var_epi8(lens[0], starts, lens[1]);
      let inside = lanes & _mm512_cmplt_epu8_mask(starts, block_end) & _mm512_test_epi8_mask(lens_at, lens_at);
      let count = (!inside).trailing_zeros() as usize;
      let take = count.min(room - read);
      // Values, 16 tokens a register: byte b of token j (little-endian) is the block's byte at
      // start + len - 1 - b when b < len - 1 (big-endian after the marker); a fixint is its marker.
      let values = |group: usize| {
        let start = _mm512_permutexvar_epi8(load(LANE_OF[group].as_ptr()), starts);
        let len = _mm512_permutex2var_epi8(lens[0], start, lens[1]);
        let back = _mm512_sub_epi8(_mm512_sub_epi8(len, one), byte_of);
        let fixint = _mm512_cmpeq_epi8_mask(len, one) & _mm512_cmpeq_epi8_mask(byte_of, _mm512_setzero_si512());
        let keep = _mm512_cmpgt_epi8_mask(back, _mm512_setzero_si512()) | fixint;
        _mm512_maskz_permutex2var_epi8(keep, w[0], _mm512_add_epi8(start, back), w[1])
      };
      let stored = |group: usize| ((1u32 << take.saturating_sub(16 * group).min(16)) - 1) as u16;
      // Groups past `room` store nothing (mask 0, no access); their addresses may lie past
      // `dst`, hence wrapping arithmetic.
      let out = dst.add(read) as *mut i32;
      _mm512_mask_storeu_epi32(out, stored(0), values(0));
      _mm512_mask_storeu_epi32(out.wrapping_add(16), stored(1), values(1));
      if take > 32 {
        _mm512_mask_storeu_epi32(out.wrapping_add(32), stored(2), values(2));
        _mm512_mask_storeu_epi32(out.wrapping_add(48), stored(3), values(3));
      }
      read += take;
      let mut exit = jump;
      if take < count || wide || jump == NONE {
        _mm512_storeu_si512(starts_at.as_mut_ptr() as *mut __m512i, starts);
        if take == 64 {
          // 64 tokens, all in the block (small ones): the next block starts at the 65th.
          _mm512_storeu_si512(lengths_at.as_mut_ptr() as *mut __m512i, lens_at);
          base += (starts_at[63] + lengths_at[63]) as usize;
          entry = 0;
          continue;
        }
        // Where the token after the last one read starts: past the block, or a byte inside
        // it that is no usual marker, or the next token when `room` ran out.
        let after = starts_at[take];
        if take < count || after < BLOCK_BYTES as u8 {
          return (read, base + after as usize);
        }
        exit = after;
      }
      base += BLOCK_BYTES;
      entry = (exit - BLOCK_BYTES as u8) as usize;
    }
    (read, base + entry)
  }
}

/// Unreachable elsewhere (`available` is false).
///
/// # Safety
/// None needed.
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn blocks(_src: *const u8, _len: usize, _dst: *mut u32, _room: usize) -> (usize, usize) {
  (0, 0)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Random token lists of every width over several blocks (other bytes in between, runs of
  /// fixints that put up to 64 tokens in a block, tokens across every block boundary), read by
  /// blocks against the one-at-a-time reader.
  #[test]
  fn blocks_read_what_the_careful_reader_reads() {
    if !available() {
      return;
    }
    let mut rng = fastrand::Rng::with_seed(11);
    let mut short = 0;
    for case in 0..4000 {
      let size = rng.usize(100..800);
      let other_every = [400, 40, 400, 12][case % 4];
      let mut bytes = Vec::new();
      while bytes.len() < size {
        if rng.usize(..other_every) == 0 {
          bytes.push([0xd0, 0xcf, 0xc0, 0xe0, 0x80, 0xff][rng.usize(..6)]); // no usual token marker
          continue;
        }
        let width = match case % 4 {
          0 => rng.u8(2..4),
          2 => rng.u8(..2),
          _ => rng.u8(..4),
        };
        let v = match width {
          0 => rng.u32(..0x80),
          1 => rng.u32(0x80..0x100),
          2 => rng.u32(0x100..0x10000),
          _ => rng.u32(0x10000..),
        };
        rmp::encode::write_uint(&mut bytes, v as u64).unwrap();
      }
      // The tokens chained from byte 0 (usual markers only), with their starts.
      let mut chain = Vec::new();
      let mut r = super::super::msgpack::Reader::new(&bytes);
      while r.at < bytes.len() && matches!(bytes[r.at], 0..=0x7f | 0xcc | 0xcd | 0xce) {
        let at = r.at;
        match r.u32() {
          Ok(Some(v)) => chain.push((at, v)),
          _ => break,
        }
      }
      let room = if case % 5 == 0 { rng.usize(..chain.len() + 5) } else { 1000 };
      let mut dst = vec![u32::MAX; room + 64];
      // SAFETY: available() checked; bytes holds its length; dst holds room.
      let (count, used) = unsafe { blocks(bytes.as_ptr(), bytes.len(), dst.as_mut_ptr(), room) };
      // A prefix of the chain, never past `room`; short of both only at a token starting
      // where fewer than 128 bytes are left.
      let whole = chain.len().min(room);
      assert!(count <= whole, "case {case}");
      let want: Vec<u32> = chain[..count].iter().map(|t| t.1).collect();
      assert_eq!(&dst[..count], &want[..], "case {case}");
      assert!(dst[count..].iter().all(|&d| d == u32::MAX), "case {case}: wrote past the count");
      assert_eq!(used, token_end(&bytes, count), "case {case}");
      if count < whole {
        assert!(chain[count].0 + READ_BYTES > bytes.len(), "case {case}: stopped at {} of {}", chain[count].0, bytes.len());
      }
      if count < 32 && chain.len() >= 32 && bytes.len() >= 400 {
        short += 1;
      }
    }
    // Most lists are read far past their first block.
    assert!(short < 200, "{short} lists read short");
  }

  /// The offset after the first `n` tokens of `bytes`.
  fn token_end(bytes: &[u8], n: usize) -> usize {
    let mut r = super::super::msgpack::Reader::new(bytes);
    for _ in 0..n {
      r.u32().unwrap().unwrap();
    }
    r.at
  }
}
