//! Synthetic prompt tokens for trace replay (src/sim/replay/synth.ts): each hash id of a Mooncake
//! trace stands for a block of deterministic pseudo-random token ids derived from the id and the
//! seed, so equal ids give equal token prefixes. Bit for bit the TypeScript reference
//! (`writeBlockTokens`, tested against it): a replay writes every prompt token of the trace (61M
//! on the synthetic one) per policy, several times faster here, where the tokens of a block are
//! independent of each other (a counter through a mixer) and the loop pipelines.

/// Token ids stay below a typical vocabulary size.
const VOCAB: u32 = 32_000;
const STEP: u32 = 0x9e37_79b9;

/// A 32-bit integer finaliser (lowbias32).
fn mix32(mut x: u32) -> u32 {
  x = (x ^ (x >> 16)).wrapping_mul(0x7feb_352d);
  x = (x ^ (x >> 15)).wrapping_mul(0x846c_a68b);
  x ^ (x >> 16)
}

/// The tokens of hash id `id` (its first `out.len()`) into `out`.
pub fn write_block(id: u64, seed: u32, out: &mut [u32]) {
  // Two mixes of (seed, id) give the id's stream start; ids above 2^32 fold their high half in.
  let start = mix32(mix32((id as u32) ^ mix32(seed)) ^ ((id >> 32) as u32));
  #[cfg(target_arch = "x86_64")]
  if std::is_x86_feature_detected!("avx2") {
    // SAFETY: the CPU has AVX2 (checked just above).
    return unsafe { stream_avx2(start, out) };
  }
  stream(start, out);
}

/// Token j is the mix of start + (j + 1) STEP: no dependency between tokens, so the loop
/// vectorizes (eight tokens at a time with AVX2).
#[inline(always)]
fn stream(start: u32, out: &mut [u32]) {
  for (j, t) in out.iter_mut().enumerate() {
    *t = mix32(start.wrapping_add(STEP.wrapping_mul(j as u32 + 1))) % VOCAB;
  }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn stream_avx2(start: u32, out: &mut [u32]) {
  stream(start, out);
}

/// A prompt from its hash ids: block k of `block_tokens` tokens from ids[k] (the last cut to
/// `out`), the tokens past the ids' blocks zero.
pub fn write_prompt(ids: impl IntoIterator<Item = u64>, seed: u32, block_tokens: usize, out: &mut [u32]) {
  let mut covered = 0;
  for id in ids {
    if covered >= out.len() {
      break;
    }
    let end = (covered + block_tokens).min(out.len());
    write_block(id, seed, &mut out[covered..end]);
    covered = end;
  }
  out[covered..].fill(0);
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn blocks_cut_and_zero_past_the_ids() {
    let mut whole = [0u32; 8];
    write_block(3, 5, &mut whole);
    assert!(whole.iter().all(|t| *t < VOCAB));
    assert_ne!(whole[0], whole[1]);
    let mut out = [7u32; 12];
    write_prompt([3, 9], 5, 4, &mut out[..10]);
    assert_eq!(&out[..4], &whole[..4]);
    let mut nine = [0u32; 4];
    write_block(9, 5, &mut nine);
    assert_eq!(&out[4..8], &nine);
    assert_eq!(&out[8..12], &[0, 0, 7, 7]);
    // An id past 2^32 differs from its low half.
    let (mut a, mut b) = ([0u32; 4], [0u32; 4]);
    write_block(3 + (1 << 32), 5, &mut a);
    write_block(3, 5, &mut b);
    assert_ne!(a, b);
  }

  #[test]
  fn vector_and_scalar_streams_agree() {
    let (mut fast, mut plain) = ([0u32; 37], [0u32; 37]);
    write_block(77, 1, &mut fast);
    let start = mix32(mix32(77 ^ mix32(1)));
    let mut state = start;
    for t in plain.iter_mut() {
      state = state.wrapping_add(STEP);
      *t = mix32(state) % VOCAB;
    }
    assert_eq!(fast, plain);
  }
}
