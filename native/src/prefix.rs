//! The common prefix of two runs of block hashes: the compare at the heart of the index walk
//! (an edge against the prompt) and of the load book's chains (a segment against the prompt).

/// Length of the common prefix of `a` and `b`, eight hashes (a cache line) at a time: with
/// 32-byte vectors where the CPU has AVX2 (half the loads and compares of the SSE2 baseline the
/// crate is built for; the walk of an 8k-token prompt is mostly this loop).
#[inline]
pub fn common_prefix(a: &[u64], b: &[u64]) -> usize {
  #[cfg(target_arch = "x86_64")]
  if std::arch::is_x86_feature_detected!("avx2") {
    // SAFETY: the CPU has AVX2.
    return unsafe { common_prefix_avx2(a, b) };
  }
  common_prefix_by_eights(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn common_prefix_avx2(a: &[u64], b: &[u64]) -> usize {
  common_prefix_by_eights(a, b)
}

#[inline(always)]
fn common_prefix_by_eights(a: &[u64], b: &[u64]) -> usize {
  let n = a.len().min(b.len());
  let (a, b) = (&a[..n], &b[..n]);
  let mut i = 0;
  while i + 8 <= n {
    let x: &[u64; 8] = a[i..i + 8].try_into().expect("8 keys");
    let y: &[u64; 8] = b[i..i + 8].try_into().expect("8 keys");
    // The XORs ORed together compile to inline vector compares; `x != y` (or a slice compare)
    // was a call to memcmp per chunk, most of the walk's time on an 8k-token prompt.
    let mut diff = 0u64;
    for k in 0..8 {
      diff |= x[k] ^ y[k];
    }
    if diff != 0 {
      break;
    }
    i += 8;
  }
  while i < n && a[i] == b[i] {
    i += 1;
  }
  i
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn by_eights_and_singles() {
    let a: Vec<u64> = (0..40).collect();
    let mut b = a.clone();
    assert_eq!(common_prefix(&a, &b), 40);
    for at in [0, 7, 8, 17, 33, 39] {
      let mut c = a.clone();
      c[at] = 99;
      assert_eq!(common_prefix(&a, &c), at, "differs at {at}");
      assert_eq!(common_prefix(&c, &a), at);
    }
    b[17] = 99;
    assert_eq!(common_prefix(&a[..5], &b), 5);
    assert_eq!(common_prefix(&a[..20], &a[..12]), 12);
    assert_eq!(common_prefix(&[], &b), 0);
    // The portable path gives the same (the tests above took AVX2's where the CPU has it).
    for at in [0, 7, 8, 17, 33, 39] {
      let mut c = a.clone();
      c[at] = 99;
      assert_eq!(common_prefix_by_eights(&a, &c), at);
    }
    assert_eq!(common_prefix_by_eights(&a, &a), 40);
  }
}
