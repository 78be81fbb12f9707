//! Token ids read 15 at a time where the CPU has AVX-512 VBMI (byte permutes across a 64-byte
//! register), for `Reader::u32_list` (msgpack.rs).
//!
//! Where a token starts depends on where the one before ended, which made reading them a chain
//! of dependent steps (one load and one add per two tokens on the SSE2 path, token_lengths.rs).
//! Here a 64-byte window is classified at once, every byte's "where the token after a token
//! starting here would start" (`n1`) is composed with itself by permutes (`n2`, `n4`, `n8`), and
//! the starts of the first 16 tokens come out of four masked permutes (token j starts at
//! n1^j(0), built from the bits of j). The values are then gathered by one more permute. The
//! chain is now one window (about 15 tokens of 3-5 bytes) per step instead of two tokens.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Tokens one window reads at most (the starts of 16 give the ends of 15).
pub const WINDOW_TOKENS: usize = 15;
/// Bytes a window reads from its first marker.
pub const WINDOW_BYTES: usize = 64;

/// Whether this CPU runs `window`.
#[inline]
pub fn available() -> bool {
  #[cfg(target_arch = "x86_64")]
  {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vbmi")
  }
  #[cfg(not(target_arch = "x86_64"))]
  false
}

/// Reads up to min(room, 15) token ids in the usual encodings (positive fixint, uint8, uint16,
/// uint32) chained from `src[0]`, only those whose bytes all lie in `src[..64]`, into `dst`.
/// Returns (tokens read, bytes they took); (0, 0) when `src[0]` is no such marker.
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI (`available`); `src` has 64 readable bytes and `dst` room
/// for the `min(room, 15)` u32 it may write.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub unsafe fn window(src: *const u8, dst: *mut u32, room: usize) -> (usize, usize) {
  const IOTA: [u8; 64] = {
    let mut a = [0u8; 64];
    let mut i = 0;
    while i < 64 {
      a[i] = i as u8;
      i += 1;
    }
    a
  };
  // Byte 4j + b of the values: lane j's start, and b.
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
  // SAFETY: the caller's promises (features, 64 readable bytes); constant tables are 64 bytes.
  unsafe {
    let w = _mm512_loadu_si512(src as *const __m512i);
    let iota = _mm512_loadu_si512(IOTA.as_ptr() as *const __m512i);
    // Token lengths by marker: 1, 2, 3, 5; anything else is no token here.
    let fix = _mm512_cmplt_epu8_mask(w, _mm512_set1_epi8(0x80u8 as i8));
    let m2 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xccu8 as i8));
    let m3 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xcdu8 as i8));
    let m5 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xceu8 as i8));
    let mut lens = _mm512_maskz_mov_epi8(fix, _mm512_set1_epi8(1));
    lens = _mm512_mask_mov_epi8(lens, m2, _mm512_set1_epi8(2));
    lens = _mm512_mask_mov_epi8(lens, m3, _mm512_set1_epi8(3));
    lens = _mm512_mask_mov_epi8(lens, m5, _mm512_set1_epi8(5));
    // n1[p]: where the token after one starting at p starts; 127 (a fixed point) for no token.
    // Indexes 64..127 read the second table, 64 + k at k: positions past the window stay put.
    let n1 = _mm512_mask_add_epi8(_mm512_set1_epi8(127), fix | m2 | m3 | m5, iota, lens);
    let beyond = _mm512_add_epi8(iota, _mm512_set1_epi8(64));
    let n2 = _mm512_permutex2var_epi8(n1, n1, beyond);
    let n4 = _mm512_permutex2var_epi8(n2, n2, beyond);
    let n8 = _mm512_permutex2var_epi8(n4, n4, beyond);
    // starts[j] = n1^j(0) for j < 16: the powers for the bits of j, lanes without the bit kept.
    let mut starts = _mm512_setzero_si512();
    starts = _mm512_mask2_permutex2var_epi8(n1, starts, 0xAAAA, beyond);
    starts = _mm512_mask2_permutex2var_epi8(n2, starts, 0xCCCC, beyond);
    starts = _mm512_mask2_permutex2var_epi8(n4, starts, 0xF0F0, beyond);
    starts = _mm512_mask2_permutex2var_epi8(n8, starts, 0xFF00, beyond);
    // Token j is whole in the window when it starts inside and the next one starts at 64 at
    // most (starts only grow until they reach 64 or more, where they stay, or meet a byte that
    // is no marker: 127).
    let whole = _mm512_cmplt_epu8_mask(starts, _mm512_set1_epi8(64)) & (_mm512_cmple_epu8_mask(starts, _mm512_set1_epi8(64)) >> 1);
    let count = ((!whole).trailing_zeros() as usize).min(WINDOW_TOKENS).min(room);
    if count == 0 {
      return (0, 0);
    }
    let mut at = [0u8; 64];
    _mm512_storeu_si512(at.as_mut_ptr() as *mut __m512i, starts);
    let used = at[count] as usize;
    // Values: byte b of token j (little-endian) is the marker's byte at start + len - 1 - b
    // when b < len - 1 (big-endian after the marker); a fixint is its marker byte.
    let start = _mm512_permutexvar_epi8(_mm512_loadu_si512(LANE_OF.as_ptr() as *const __m512i), starts);
    let len = _mm512_permutexvar_epi8(start, lens);
    let b = _mm512_loadu_si512(BYTE_OF.as_ptr() as *const __m512i);
    let back = _mm512_sub_epi8(_mm512_sub_epi8(len, _mm512_set1_epi8(1)), b);
    let fixint = _mm512_cmpeq_epi8_mask(len, _mm512_set1_epi8(1)) & _mm512_cmpeq_epi8_mask(b, _mm512_setzero_si512());
    let keep = _mm512_cmpgt_epi8_mask(back, _mm512_setzero_si512()) | fixint;
    let values = _mm512_maskz_permutexvar_epi8(keep, _mm512_add_epi8(start, back), w);
    _mm512_mask_storeu_epi32(dst as *mut i32, ((1u32 << count) - 1) as u16, values);
    (count, used)
  }
}

/// Unreachable elsewhere (`available` is false).
///
/// # Safety
/// None needed.
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn window(_src: *const u8, _dst: *mut u32, _room: usize) -> (usize, usize) {
  (0, 0)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Every window of random token lists (all widths, other bytes in between) against the
  /// one-at-a-time reading.
  #[test]
  fn windows_read_what_the_careful_reader_reads() {
    if !available() {
      return;
    }
    let mut rng = fastrand::Rng::with_seed(11);
    for case in 0..3000 {
      let mut bytes = Vec::new();
      while bytes.len() < 80 {
        if rng.u8(..40) == 0 {
          bytes.push([0xd0, 0xcf, 0xc0, 0xe0][rng.usize(..4)]); // no usual token marker
          continue;
        }
        // Some cases with wide tokens only, so that windows fill up to their last byte.
        let v = match if case % 2 == 0 { rng.u8(2..4) } else { rng.u8(..4) } {
          0 => rng.u32(..0x80),
          1 => rng.u32(0x80..0x100),
          2 => rng.u32(0x100..0x10000),
          _ => rng.u32(0x10000..),
        };
        rmp::encode::write_uint(&mut bytes, v as u64).unwrap();
      }
      // The tokens chained from byte 0 (if it is a token) that end within 64 bytes.
      let mut expect = Vec::new();
      let mut at = 0;
      let mut r = super::super::msgpack::Reader::new(&bytes);
      while expect.len() < WINDOW_TOKENS {
        let before = r.clone();
        match r.u32() {
          Ok(Some(v)) if r.at <= 64 && matches!(bytes[at], 0..=0x7f | 0xcc | 0xcd | 0xce) => {
            expect.push(v);
            at = r.at;
          }
          _ => {
            r = before;
            break;
          }
        }
      }
      let room = if case % 5 == 0 { rng.usize(..20) } else { 16 };
      let mut dst = [u32::MAX; 16];
      // SAFETY: available() checked; bytes holds at least 80; dst holds 16.
      let (count, used) = unsafe { window(bytes.as_ptr(), dst.as_mut_ptr(), room) };
      let n = expect.len().min(room);
      assert_eq!(count, n, "case {case}: {:02x?}", &bytes[..64]);
      assert_eq!(&dst[..count], &expect[..n], "case {case}");
      assert!(dst[count..].iter().all(|&d| d == u32::MAX), "case {case}: wrote past the count");
      assert_eq!(used, if n == 0 { 0 } else { token_end(&bytes, n) }, "case {case}");
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
