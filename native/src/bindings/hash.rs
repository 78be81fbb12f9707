use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::range_error;
use crate::hash;

/// Largest block size accepted: engines use 16..1024 tokens per block.
pub const MAX_BLOCK_SIZE: u32 = 1 << 16;

pub fn check_block_size(block_size: u32) -> Result<usize> {
  if block_size == 0 || block_size > MAX_BLOCK_SIZE {
    return Err(range_error(format!("blockSize must be an integer in 1..={MAX_BLOCK_SIZE}, got {block_size}")));
  }
  Ok(block_size as usize)
}

/// Seed of the local block hash for a LoRA adapter name and cache namespace.
#[napi]
pub fn block_hash_seed(lora_name: Option<String>, cache_namespace: Option<String>) -> BigInt {
  BigInt::from(hash::block_seed(lora_name.as_deref(), cache_namespace.as_deref()))
}

/// The u64 a multimodal identifier contributes to its block's hash.
#[napi]
pub fn mm_identifier_hash(id: String) -> BigInt {
  BigInt::from(hash::mm_identifier_hash(&id))
}

/// Local hashes of the complete blocks of `tokens` (read in place, never copied), written into
/// `out` (at least tokens.len() / block_size entries; the caller allocates it, so no external
/// ArrayBuffer is created: V8 frees those only when the event loop turns, which a synchronous
/// hot loop never does). `mm_offsets`/`mm_hashes` (CSR): block i's multimodal hashes are
/// mm_hashes[mm_offsets[i]..mm_offsets[i+1]]. Returns the number of hashes written.
#[napi]
pub fn compute_block_hashes_into(
  tokens: &[u32],
  block_size: u32,
  seed: BigInt,
  mm_offsets: Option<&[u32]>,
  mm_hashes: Option<BigUint64ArraySlice>,
  mut out: BigUint64ArraySlice,
) -> Result<u32> {
  let bs = check_block_size(block_size)?;
  let (sign, seed, lossless) = seed.get_u64();
  if sign || !lossless {
    return Err(range_error("seed must be a u64"));
  }
  let blocks = tokens.len() / bs;
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is a fresh
  // array of the wrapper's (src/core/hashing.ts), never one of the inputs.
  let out = unsafe { out.as_mut() };
  if out.len() < blocks {
    return Err(range_error(format!("out must hold at least {blocks} entries, got {}", out.len())));
  }
  match (mm_offsets, mm_hashes) {
    (Some(offsets), Some(values)) => {
      let per_block = split_csr(offsets, values.as_ref())?;
      for (i, block) in tokens.chunks_exact(bs).enumerate() {
        out[i] = match per_block.get(i) {
          Some(hashes) => hash::hash_block_with_mm(block, hashes, seed),
          None => hash::hash_block(block, seed),
        };
      }
    }
    _ => {
      for (slot, block) in out.iter_mut().zip(tokens.chunks_exact(bs)) {
        *slot = hash::hash_block(block, seed);
      }
    }
  }
  Ok(blocks as u32)
}

fn split_csr(offsets: &[u32], values: &[u64]) -> Result<Vec<Vec<u64>>> {
  let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
  for w in offsets.windows(2) {
    let (a, b) = (w[0] as usize, w[1] as usize);
    if a > b || b > values.len() {
      return Err(range_error("multimodal offsets must be non-decreasing and within the hashes"));
    }
    out.push(values[a..b].to_vec());
  }
  Ok(out)
}

/// Chained sequence hashes of a run of local block hashes, written into `out` (same length).
#[napi]
pub fn compute_sequence_hashes_into(block_hashes: BigUint64ArraySlice, mut out: BigUint64ArraySlice) -> Result<()> {
  let local = block_hashes.as_ref();
  // SAFETY: synchronous; `out` is a fresh array of the wrapper's, distinct from the input.
  let out = unsafe { out.as_mut() };
  if out.len() != local.len() {
    return Err(range_error(format!("out must hold {} entries, got {}", local.len(), out.len())));
  }
  let mut prev = 0u64;
  for (i, (&h, slot)) in local.iter().zip(out.iter_mut()).enumerate() {
    prev = if i == 0 { h } else { hash::chain_hash(prev, h) };
    *slot = prev;
  }
  Ok(())
}
