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

/// Token ids as the JSON array text engines receive (what JSON.stringify writes for them) into
/// `out` (at least 11 bytes an id, plus 2), without a JavaScript number-to-string conversion per
/// id; returns the length written (ASCII).
#[napi]
pub fn token_ids_json_into(ids: &[u32], mut out: Uint8ArraySlice) -> Result<u32> {
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is an array
  // of the wrapper's own (src/core/prompt-scan.ts), never `ids`' buffer.
  let out = unsafe { out.as_mut() };
  let need = prompt::max_ids_json_len(ids.len());
  if out.len() < need {
    return Err(range_error(format!("out must hold at least {need} bytes, got {}", out.len())));
  }
  Ok(prompt::write_ids_json(ids, out) as u32)
}

/// `head` (an object's JSON text without its closing `}`), then `key` (a JSON string) and the
/// JSON array of `ids` as its last member, then `}`, into `out`: a body with its prompt as ids in
/// one piece. Returns the length written (UTF-8).
#[napi]
pub fn json_with_token_ids_into(head: String, key: String, ids: &[u32], mut out: Uint8ArraySlice) -> Result<u32> {
  // SAFETY: as in token_ids_json_into.
  let out = unsafe { out.as_mut() };
  let need = head.len() + key.len() + 2 + prompt::max_ids_json_len(ids.len());
  if out.len() < need {
    return Err(range_error(format!("out must hold at least {need} bytes, got {}", out.len())));
  }
  let mut at = 0;
  for piece in [head.as_bytes(), if head.len() > 1 { b"," } else { b"" }, key.as_bytes(), b":"] {
    out[at..at + piece.len()].copy_from_slice(piece);
    at += piece.len();
  }
  at += prompt::write_ids_json(ids, &mut out[at..]);
  out[at] = b'}';
  Ok((at + 1) as u32)
}
