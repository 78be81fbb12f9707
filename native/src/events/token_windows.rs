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

/// Tokens one window reads at most (the starts of 32 give the ends of 31).
pub const WINDOW_TOKENS: usize = 31;
/// Bytes a window reads from its first marker.
pub const WINDOW_BYTES: usize = 128;

#[cfg(test)]
thread_local! {
  /// Set by a test to run the portable path on a CPU that has the windows.
  pub static OFF_IN_TEST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this CPU runs `window`.
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

/// Reads up to min(room, 31) token ids in the usual encodings (positive fixint, uint8, uint16,
/// uint32) chained from `src[0]`, only those whose bytes all lie in `src[..126]`, into `dst`.
/// Returns (tokens read, bytes they took); (0, 0) when `src[0]` is no such marker.
///
/// # Safety
/// The CPU has AVX-512F, BW and VBMI (`available`); `src` has 128 readable bytes and `dst` room
/// for the `min(room, 31)` u32 it may write.
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
  /// 127: no token starts here, or the next would not start before byte 127; a fixed point.
  const NONE: i8 = 127;
  // SAFETY: the caller's promises (features, 128 readable bytes); constant tables are 64 bytes.
  unsafe {
    let load = |p: *const u8| _mm512_loadu_si512(p as *const __m512i);
    let (w_lo, w_hi) = (load(src), load(src.add(64)));
    let iota = load(IOTA.as_ptr());
    let none = _mm512_set1_epi8(NONE);
    // Token lengths by marker: 1, 2, 3, 5; anything else is no token here. `next`: where the
    // token after one starting here starts (NONE past the window).
    let lengths = |w: __m512i| {
      let fix = _mm512_cmplt_epu8_mask(w, _mm512_set1_epi8(0x80u8 as i8));
      let m2 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xccu8 as i8));
      let m3 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xcdu8 as i8));
      let m5 = _mm512_cmpeq_epi8_mask(w, _mm512_set1_epi8(0xceu8 as i8));
      let mut lens = _mm512_maskz_mov_epi8(fix, _mm512_set1_epi8(1));
      lens = _mm512_mask_mov_epi8(lens, m2, _mm512_set1_epi8(2));
      lens = _mm512_mask_mov_epi8(lens, m3, _mm512_set1_epi8(3));
      lens = _mm512_mask_mov_epi8(lens, m5, _mm512_set1_epi8(5));
      (lens, fix | m2 | m3 | m5)
    };
    let (lens_lo, tok_lo) = lengths(w_lo);
    let (lens_hi, tok_hi) = lengths(w_hi);
    let n1_lo = _mm512_mask_add_epi8(none, tok_lo, iota, lens_lo);
    let n1_hi = _mm512_min_epu8(_mm512_mask_add_epi8(none, tok_hi, _mm512_add_epi8(iota, _mm512_set1_epi8(64)), lens_hi), none);
    // Powers of `next` over the 128 positions (7-bit indexes: the two halves).
    let square = |lo: __m512i, hi: __m512i| (_mm512_permutex2var_epi8(lo, lo, hi), _mm512_permutex2var_epi8(lo, hi, hi));
    let (n2_lo, n2_hi) = square(n1_lo, n1_hi);
    let (n4_lo, n4_hi) = square(n2_lo, n2_hi);
    let (n8_lo, n8_hi) = square(n4_lo, n4_hi);
    let (n16_lo, n16_hi) = square(n8_lo, n8_hi);
    // starts[j] = next^j(0) for j < 32: the powers for the bits of j, lanes without the bit kept.
    let mut starts = _mm512_setzero_si512();
    starts = _mm512_mask2_permutex2var_epi8(n1_lo, starts, 0xAAAA_AAAA, n1_hi);
    starts = _mm512_mask2_permutex2var_epi8(n2_lo, starts, 0xCCCC_CCCC, n2_hi);
    starts = _mm512_mask2_permutex2var_epi8(n4_lo, starts, 0xF0F0_F0F0, n4_hi);
    starts = _mm512_mask2_permutex2var_epi8(n8_lo, starts, 0xFF00_FF00, n8_hi);
    starts = _mm512_mask2_permutex2var_epi8(n16_lo, starts, 0xFFFF_0000, n16_hi);
    // Token j is whole in the window when the one after it starts in it (starts only grow,
    // until NONE).
    let whole = _mm512_cmplt_epu8_mask(starts, none) >> 1;
    let count = ((!whole).trailing_zeros() as usize).min(WINDOW_TOKENS).min(room);
    if count == 0 {
      return (0, 0);
    }
    let mut at = [0u8; 64];
    _mm512_storeu_si512(at.as_mut_ptr() as *mut __m512i, starts);
    let used = at[count] as usize;
    // Values, 16 tokens a register: byte b of token j (little-endian) is the window's byte at
    // start + len - 1 - b when b < len - 1 (big-endian after the marker); a fixint is its marker.
    let lane_of = load(LANE_OF.as_ptr());
    let b = load(BYTE_OF.as_ptr());
    let values = |first: i8| {
      let start = _mm512_permutexvar_epi8(_mm512_add_epi8(lane_of, _mm512_set1_epi8(first)), starts);
      let len = _mm512_permutex2var_epi8(lens_lo, start, lens_hi);
      let back = _mm512_sub_epi8(_mm512_sub_epi8(len, _mm512_set1_epi8(1)), b);
      let fixint = _mm512_cmpeq_epi8_mask(len, _mm512_set1_epi8(1)) & _mm512_cmpeq_epi8_mask(b, _mm512_setzero_si512());
      let keep = _mm512_cmpgt_epi8_mask(back, _mm512_setzero_si512()) | fixint;
      _mm512_maskz_permutex2var_epi8(keep, w_lo, _mm512_add_epi8(start, back), w_hi)
    };
    _mm512_mask_storeu_epi32(dst as *mut i32, ((1u32 << count.min(16)) - 1) as u16, values(0));
    if count > 16 {
      _mm512_mask_storeu_epi32(dst.add(16) as *mut i32, ((1u32 << (count - 16)) - 1) as u16, values(16));
    }
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
      while bytes.len() < 150 {
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
      // The tokens chained from byte 0 (if it is a token) that end before byte 127.
      let mut expect = Vec::new();
      let mut at = 0;
      let mut r = super::super::msgpack::Reader::new(&bytes);
      while expect.len() < WINDOW_TOKENS {
        let before = r.clone();
        match r.u32() {
          Ok(Some(v)) if r.at < 127 && matches!(bytes[at], 0..=0x7f | 0xcc | 0xcd | 0xce) => {
            expect.push(v);
            at = r.at;
          }
          _ => {
            r = before;
            break;
          }
        }
      }
      let room = if case % 5 == 0 { rng.usize(..40) } else { 32 };
      let mut dst = [u32::MAX; 32];
      // SAFETY: available() checked; bytes holds at least 150; dst holds 32.
      let (count, used) = unsafe { window(bytes.as_ptr(), dst.as_mut_ptr(), room) };
      let n = expect.len().min(room);
      assert_eq!(count, n, "case {case}: {:02x?}", &bytes[..128]);
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
