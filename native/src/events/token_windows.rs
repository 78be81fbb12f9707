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

/// Bytes a block's tokens start in (each block reads 64 more, for tokens ending past it).
pub const BLOCK_BYTES: usize = 64;
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
/// chained from `src[0]`, a 64-byte block at a time while a block has 128 readable bytes, into
/// `dst`. Stops at the first byte chained to that is no such marker, after `room` tokens, or
/// where fewer than 128 bytes are left. Returns (tokens read, bytes they took).
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI (`available`); `src` has `len` readable bytes and `dst`
/// room for `room` u32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub unsafe fn blocks(src: *const u8, len: usize, dst: *mut u32, room: usize) -> (usize, usize) {
  const IOTA: [u8; 64] = iota(0);
  /// Positions past the block map to themselves (the second table of every lookup).
  const PAST: [u8; 64] = iota(64);
  // Byte 4j + b of a values register: lane j's token, and b.
  const LANE_OF: [u8; 64] = {
    let mut a = [0u8; 64];
    let mut i = 0;
    while i < 64 {
      a[i] = (i / 4) as u8;
      i += 1;
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
  /// No token starts here: a fixed point past the block, so the chain stops.
  const NONE: i8 = 127;
  // Lanes of the starts register taking the power 2^k of the map: those whose index has bit k.
  const BITS: [u64; 6] = [0xAAAA_AAAA_AAAA_AAAA, 0xCCCC_CCCC_CCCC_CCCC, 0xF0F0_F0F0_F0F0_F0F0, 0xFF00_FF00_FF00_FF00, 0xFFFF_0000_FFFF_0000, 0xFFFF_FFFF_0000_0000];
  // SAFETY: the caller's promises (features, `len` readable bytes, `room` u32 in `dst`); every
  // block loads 128 bytes from a base with base + 128 <= len; constant tables are 64 bytes.
  unsafe {
    let load = |p: *const u8| _mm512_loadu_si512(p as *const __m512i);
    let iota = load(IOTA.as_ptr());
    let past = load(PAST.as_ptr());
    let lane_of = load(LANE_OF.as_ptr());
    let byte_of = load(BYTE_OF.as_ptr());
    let none = _mm512_set1_epi8(NONE);
    let sixty_four = _mm512_set1_epi8(64);
    // `m64` of the block being read, in memory: the next entry is one byte load from it.
    let mut exits = [0u8; 64];
    let mut starts_at = [0u8; 64];
    let (mut base, mut entry, mut read) = (0usize, 0usize, 0usize);
    while read < room && base + READ_BYTES <= len {
      let w_lo = load(src.add(base));
      let w_hi = load(src.add(base + 64));
      // Token lengths by marker: 1, 2, 3, 5; anything else is no token here.
      let fix = _mm512_cmplt_epu8_mask(w_lo, _mm512_set1_epi8(0x80u8 as i8));
      let m2 = _mm512_cmpeq_epi8_mask(w_lo, _mm512_set1_epi8(0xccu8 as i8));
      let m3 = _mm512_cmpeq_epi8_mask(w_lo, _mm512_set1_epi8(0xcdu8 as i8));
      let m5 = _mm512_cmpeq_epi8_mask(w_lo, _mm512_set1_epi8(0xceu8 as i8));
      let mut lens = _mm512_maskz_mov_epi8(fix, _mm512_set1_epi8(1));
      lens = _mm512_mask_mov_epi8(lens, m2, _mm512_set1_epi8(2));
      lens = _mm512_mask_mov_epi8(lens, m3, _mm512_set1_epi8(3));
      lens = _mm512_mask_mov_epi8(lens, m5, _mm512_set1_epi8(5));
      // The map and its powers, off the chain (they depend on the block's bytes only). A
      // lookup of position x: the table's byte x below 64, x itself past the block.
      let look = |table: __m512i, x: __m512i| _mm512_permutex2var_epi8(table, x, past);
      let mut powers = [_mm512_mask_add_epi8(none, fix | m2 | m3 | m5, iota, lens); 6];
      for k in 1..6 {
        powers[k] = look(powers[k - 1], powers[k - 1]);
      }
      _mm512_storeu_si512(exits.as_mut_ptr() as *mut __m512i, look(powers[5], powers[5]));
      // The chain: where this block's first token starts (0-4: the last one before may end
      // past the block's start).
      let mut starts = _mm512_set1_epi8(entry as i8);
      for k in 0..6 {
        starts = _mm512_mask2_permutex2var_epi8(powers[k], starts, BITS[k], past);
      }
      // Tokens starting in the block: starts only grow, and stay once past it (or at NONE,
      // whose start is no token).
      let inside = _mm512_cmplt_epu8_mask(starts, sixty_four) & _mm512_test_epi8_mask(_mm512_permutexvar_epi8(starts, lens), _mm512_set1_epi8(-1));
      let count = (!inside).trailing_zeros() as usize;
      let take = count.min(room - read);
      // Values, 16 tokens a register: byte b of token j (little-endian) is the block's byte at
      // start + len - 1 - b when b < len - 1 (big-endian after the marker); a fixint is its marker.
      let values = |first: i8| {
        let start = _mm512_permutexvar_epi8(_mm512_add_epi8(lane_of, _mm512_set1_epi8(first)), starts);
        let len = _mm512_permutexvar_epi8(start, lens);
        let back = _mm512_sub_epi8(_mm512_sub_epi8(len, _mm512_set1_epi8(1)), byte_of);
        let fixint = _mm512_cmpeq_epi8_mask(len, _mm512_set1_epi8(1)) & _mm512_cmpeq_epi8_mask(byte_of, _mm512_setzero_si512());
        let keep = _mm512_cmpgt_epi8_mask(back, _mm512_setzero_si512()) | fixint;
        _mm512_maskz_permutex2var_epi8(keep, w_lo, _mm512_add_epi8(start, back), w_hi)
      };
      let lanes = |group: usize| ((1u32 << take.saturating_sub(16 * group).min(16)) - 1) as u16;
      let out = dst.add(read) as *mut i32;
      _mm512_mask_storeu_epi32(out, lanes(0), values(0));
      _mm512_mask_storeu_epi32(out.add(16), lanes(1), values(16));
      if take > 32 {
        _mm512_mask_storeu_epi32(out.add(32), lanes(2), values(32));
        _mm512_mask_storeu_epi32(out.add(48), lanes(3), values(48));
      }
      read += take;
      let exit = exits[entry] as usize;
      if take < count || exit == NONE as usize {
        // Stopped inside the block: after `room` tokens, or at a byte that is no usual marker
        // (the start after the last token read).
        _mm512_storeu_si512(starts_at.as_mut_ptr() as *mut __m512i, starts);
        return (read, base + starts_at[take] as usize);
      }
      base += BLOCK_BYTES;
      entry = exit - BLOCK_BYTES;
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
      // The tokens chained from byte 0 that start in the blocks read (each needs 128 bytes).
      let starts_before = if bytes.len() >= READ_BYTES { ((bytes.len() - READ_BYTES) / BLOCK_BYTES + 1) * BLOCK_BYTES } else { 0 };
      let mut expect = Vec::new();
      let mut r = super::super::msgpack::Reader::new(&bytes);
      while r.at < starts_before && matches!(bytes[r.at], 0..=0x7f | 0xcc | 0xcd | 0xce) {
        expect.push(r.u32().unwrap().unwrap());
      }
      let room = if case % 5 == 0 { rng.usize(..expect.len() + 5) } else { 1000 };
      let mut dst = vec![u32::MAX; room + 64];
      // SAFETY: available() checked; bytes holds its length; dst holds room.
      let (count, used) = unsafe { blocks(bytes.as_ptr(), bytes.len(), dst.as_mut_ptr(), room) };
      let n = expect.len().min(room);
      assert_eq!(count, n, "case {case}");
      assert_eq!(&dst[..count], &expect[..n], "case {case}");
      assert!(dst[count..].iter().all(|&d| d == u32::MAX), "case {case}: wrote past the count");
      assert_eq!(used, token_end(&bytes, n), "case {case}");
    }
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
