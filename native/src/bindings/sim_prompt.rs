use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use crate::sim_prompt;

/// Ids above this are not exact doubles.
const MAX_ID: f64 = 9_007_199_254_740_991.0;

/// A synthetic prompt into `out`: block k of `blockTokens` tokens from hash id ids[k] for k <
/// `count` (the last block cut to `out`), the tokens past them zero.
#[napi]
pub fn sim_prompt_tokens(ids: &[f64], count: u32, seed: u32, block_tokens: u32, mut out: Uint32ArraySlice) -> Result<()> {
  let count = count as usize;
  if count > ids.len() {
    return Err(range_error(format!("count {count} exceeds the {} ids given", ids.len())));
  }
  if block_tokens == 0 {
    return Err(range_error("blockTokens must be at least 1"));
  }
  let ids = &ids[..count];
  if let Some(bad) = ids.iter().find(|id| !(**id >= 0.0 && **id <= MAX_ID && id.fract() == 0.0)) {
    return Err(range_error(format!("a hash id must be a non-negative safe integer, got {bad}")));
  }
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is never the
  // ids' buffer (a Float64Array against a Uint32Array).
  let out = unsafe { out.as_mut() };
  sim_prompt::write_prompt(ids.iter().map(|id| *id as u64), seed, block_tokens as usize, out);
  Ok(())
}
