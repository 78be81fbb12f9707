use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use crate::prompt;

/// Reads a request body's token-id prompt (see prompt.rs): the ids go to `out` (at least
/// body.length / 2 + 1 entries), the array's byte span to `span[0]..span[1]`. Returns the id
/// count, or -1 when the body is not the plain case and the caller must parse it whole.
#[napi]
pub fn scan_token_prompt(body: &[u8], mut out: Uint32ArraySlice, mut span: Uint32ArraySlice) -> Result<i64> {
  // SAFETY: a synchronous call: no JavaScript runs while the slices live, and the wrapper
  // (src/core/prompt-scan.ts) passes arrays of its own, never the body's buffer.
  let (out, span) = unsafe { (out.as_mut(), span.as_mut()) };
  if out.len() < prompt::max_tokens_in(body.len()) {
    return Err(range_error(format!("out must hold at least {} entries, got {}", prompt::max_tokens_in(body.len()), out.len())));
  }
  if span.len() < 2 || body.len() > u32::MAX as usize {
    return Err(range_error("span must hold 2 entries and the body be under 4 GiB"));
  }
  Ok(match prompt::scan_token_prompt(body, out) {
    Some(p) => {
      span[0] = p.start as u32;
      span[1] = p.end as u32;
      p.count as i64
    }
    None => -1,
  })
}
