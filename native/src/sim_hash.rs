//! The simulated engine's own KV block hash (src/sim/engine/block-hash.ts): a 2 x 32-bit
//! murmur3-style hash of a block's tokens chained with its parent's hash, deliberately not the
//! router's XXH3. Here for runs of blocks: a trace replay hashes every prompt token on its
//! engines, several times faster in Rust than in JavaScript. Bit for bit the TypeScript one
//! (tested against it).

/// Parent halves (hi, lo) of a sequence's first block.
pub const ROOT: (u32, u32) = (0x243f_6a88, 0x85a3_08d3);

fn mix32(mut x: u32) -> u32 {
  x ^= x >> 16;
  x = x.wrapping_mul(0x85eb_ca6b);
  x ^= x >> 13;
  x = x.wrapping_mul(0xc2b2_ae35);
  x ^ (x >> 16)
}

/// The hash halves (hi, lo) of `tokens` chained to `parent` (hi, lo), with a LoRA seed.
pub fn hash_block(tokens: &[u32], parent: (u32, u32), lora: u32) -> (u32, u32) {
  let mut h1 = parent.1 ^ lora;
  let mut h2 = parent.0 ^ mix32(lora ^ 0x9e37_79b9);
  for &t in tokens {
    let k1 = t.wrapping_mul(0xcc9e_2d51).rotate_left(15);
    h1 ^= k1.wrapping_mul(0x1b87_3593);
    h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    let k2 = t.wrapping_mul(0x85eb_ca77).rotate_left(16);
    h2 ^= k2.wrapping_mul(0xc2b2_ae3d);
    h2 = h2.rotate_left(17).wrapping_mul(5).wrapping_add(0x3849_5ab5);
  }
  finish(h1, h2, tokens.len() as u32)
}

/// A block's hash halves from its lanes after its `len` tokens.
fn finish(mut h1: u32, mut h2: u32, len: u32) -> (u32, u32) {
  h1 ^= len;
  h2 ^= len;
  h1 = h1.wrapping_add(h2);
  h2 = h2.wrapping_add(h1);
  h1 = mix32(h1);
  h2 = mix32(h2);
  h1 = h1.wrapping_add(h2);
  h2 = h2.wrapping_add(h1);
  (h1, h2)
}

/// Hashes consecutive blocks of `block_size` tokens (`tokens` holds whole blocks), each chained
/// to the one before and the first to `parent`, into `out` as u64s (hi << 32 | lo).
pub fn hash_chain(tokens: &[u32], block_size: usize, parent: (u32, u32), lora: u32, out: &mut [u64]) {
  #[cfg(target_arch = "x86_64")]
  if std::is_x86_feature_detected!("avx2") {
    // SAFETY: the CPU has AVX2 (checked just above).
    return unsafe { hash_chain_avx2(tokens, block_size, parent, lora, out) };
  }
  hash_chain_split(tokens, block_size, parent, lora, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hash_chain_avx2(tokens: &[u32], block_size: usize, parent: (u32, u32), lora: u32, out: &mut [u64]) {
  hash_chain_split(tokens, block_size, parent, lora, out);
}

/// Tokens whose mixed values are computed in one pass, ahead of the chain.
const RUN: usize = 16;

/// `hash_block` chained over blocks, each token's mixed values (k1, k2: independent of the chain)
/// computed a run of tokens at a time in a loop that vectorizes, so that the per-token chain (an
/// xor, a rotation, a multiply-add per lane) is all that is left in sequence.
#[inline(always)]
fn hash_chain_split(tokens: &[u32], block_size: usize, parent: (u32, u32), lora: u32, out: &mut [u64]) {
  let mut parent = parent;
  let (mut k1, mut k2) = ([0u32; RUN], [0u32; RUN]);
  for (block, slot) in tokens.chunks_exact(block_size).zip(out.iter_mut()) {
    let mut h1 = parent.1 ^ lora;
    let mut h2 = parent.0 ^ mix32(lora ^ 0x9e37_79b9);
    for run in block.chunks(RUN) {
      for ((t, a), b) in run.iter().zip(k1.iter_mut()).zip(k2.iter_mut()) {
        *a = t.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
        *b = t.wrapping_mul(0x85eb_ca77).rotate_left(16).wrapping_mul(0xc2b2_ae3d);
      }
      for (a, b) in k1[..run.len()].iter().zip(&k2[..run.len()]) {
        h1 ^= a;
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
        h2 ^= b;
        h2 = h2.rotate_left(17).wrapping_mul(5).wrapping_add(0x3849_5ab5);
      }
    }
    parent = finish(h1, h2, block.len() as u32);
    *slot = (u64::from(parent.0) << 32) | u64::from(parent.1);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn chains_each_block_to_the_one_before() {
    let tokens: Vec<u32> = (0..64).collect();
    let mut out = [0u64; 4];
    hash_chain(&tokens, 16, ROOT, 7, &mut out);
    let mut parent = ROOT;
    for (i, block) in tokens.chunks_exact(16).enumerate() {
      parent = hash_block(block, parent, 7);
      assert_eq!(out[i], (u64::from(parent.0) << 32) | u64::from(parent.1));
    }
    assert_ne!(out[0], out[1]);
  }

  #[test]
  fn split_chain_agrees_with_the_plain_hash_at_any_block_size() {
    let tokens: Vec<u32> = (0..600u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    for bs in [1, 5, 16, 17, 40, 64] {
      let n = tokens.len() / bs;
      let mut out = vec![0u64; n];
      hash_chain(&tokens[..n * bs], bs, (3, 4), 9, &mut out);
      let mut parent = (3, 4);
      for (i, block) in tokens[..n * bs].chunks_exact(bs).enumerate() {
        parent = hash_block(block, parent, 9);
        assert_eq!(out[i], (u64::from(parent.0) << 32) | u64::from(parent.1), "block size {bs}, block {i}");
      }
    }
  }
}
