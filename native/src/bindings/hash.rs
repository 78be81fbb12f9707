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

/// Local hashes of the complete blocks of `tokens` (read in place, never copied).
/// `mm_offsets`/`mm_hashes` (CSR): block i's multimodal hashes are
/// mm_hashes[mm_offsets[i]..mm_offsets[i+1]].
#[napi]
pub fn compute_block_hashes(
  tokens: Uint32Array,
  block_size: u32,
  seed: BigInt,
  mm_offsets: Option<Uint32Array>,
  mm_hashes: Option<BigUint64Array>,
) -> Result<BigUint64Array> {
  let bs = check_block_size(block_size)?;
  let (sign, seed, lossless) = seed.get_u64();
  if sign || !lossless {
    return Err(range_error("seed must be a u64"));
  }
  let out = match (mm_offsets, mm_hashes) {
    (Some(offsets), Some(values)) => {
      let per_block = split_csr(&offsets, &values)?;
      hash::block_hashes_with_mm(&tokens, bs, seed, &per_block)
    }
    _ => hash::block_hashes(&tokens, bs, seed),
  };
  Ok(BigUint64Array::new(out))
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

/// Chained sequence hashes of a run of local block hashes.
#[napi]
pub fn compute_sequence_hashes(block_hashes: BigUint64Array) -> BigUint64Array {
  BigUint64Array::new(hash::sequence_hashes(&block_hashes))
}

/// Bulk hashing for the worker pool: many prompts in one token array, prompt i being
/// tokens[offsets[i]..offsets[i+1]]. Returns all local hashes concatenated and, in
/// `hash_offsets`, where each prompt's hashes start (length prompts + 1).
#[napi(object)]
pub struct BatchHashes {
  pub hashes: BigUint64Array,
  pub hash_offsets: Uint32Array,
}

#[napi]
pub fn compute_block_hashes_batch(tokens: Uint32Array, offsets: Uint32Array, block_size: u32, seed: BigInt) -> Result<BatchHashes> {
  let bs = check_block_size(block_size)?;
  let (sign, seed, lossless) = seed.get_u64();
  if sign || !lossless {
    return Err(range_error("seed must be a u64"));
  }
  let mut hashes = Vec::with_capacity(tokens.len() / bs);
  let mut hash_offsets = Vec::with_capacity(offsets.len());
  hash_offsets.push(0u32);
  for w in offsets.windows(2) {
    let (a, b) = (w[0] as usize, w[1] as usize);
    if a > b || b > tokens.len() {
      return Err(range_error("offsets must be non-decreasing and within the tokens"));
    }
    hashes.extend(tokens[a..b].chunks_exact(bs).map(|blk| hash::hash_block(blk, seed)));
    hash_offsets.push(hashes.len() as u32);
  }
  Ok(BatchHashes { hashes: BigUint64Array::new(hashes), hash_offsets: Uint32Array::new(hash_offsets) })
}
