use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use crate::sim_hash;

/// The simulated engine's hashes of `count` blocks of `blockSize` tokens of `tokens` from token
/// `from`, chained (the first to the hash with halves (parentHi, parentLo)), into
/// `out[at, at + count)` as u64s (hi << 32 | lo).
#[napi]
#[allow(clippy::too_many_arguments, reason = "a JavaScript function's parameters, as the TypeScript wrapper passes them")]
pub fn sim_engine_hash_blocks(
  tokens: &[u32],
  from: u32,
  block_size: u32,
  count: u32,
  parent_hi: u32,
  parent_lo: u32,
  lora: u32,
  mut out: BigUint64ArraySlice,
  at: u32,
) -> Result<()> {
  let (from, bs, count, at) = (from as usize, block_size as usize, count as usize, at as usize);
  if bs == 0 {
    return Err(range_error("blockSize must be at least 1"));
  }
  let end = from + count * bs;
  if end > tokens.len() {
    return Err(range_error(format!("{count} blocks of {bs} tokens from token {from} need {end} tokens, got {}", tokens.len())));
  }
  if at + count > out.len() {
    return Err(range_error(format!("out must hold {} hashes, got {}", at + count, out.len())));
  }
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` (a
  // sequence's hash buffer) is never `tokens`' buffer.
  let out = unsafe { out.as_mut() };
  sim_hash::hash_chain(&tokens[from..end], bs, (parent_hi, parent_lo), lora, &mut out[at..at + count]);
  Ok(())
}
