//! `NativeTokenizer`: a text encoder (crate::tokenize: a HuggingFace tokenizer.json or the byte
//! tokenizer) behind src/core/tokenizer.ts. Conversions and checks only. Ids go into an array of
//! the caller's; when it is too small the call returns the count and keeps the ids for takeIds.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::range_error;
use crate::prompt;
use crate::tokenize::{HfTokenizer, TokenIds, Tokenizer};

/// A buffer this large is kept between calls; a larger one is dropped after its call.
const KEPT_IDS: usize = 1 << 16;

#[napi]
pub struct NativeTokenizer {
  inner: Arc<Tokenizer>,
  /// The last encode's ids, for a caller whose array was too small.
  ids: TokenIds,
}

#[napi]
impl NativeTokenizer {
  /// Reads a tokenizer.json from its UTF-8 bytes, on the calling thread (see loadTokenizer).
  #[napi(factory)]
  pub fn from_json(json: &[u8]) -> Result<Self> {
    Ok(Self::new(Tokenizer::Hf(read(json)?)))
  }

  /// The byte tokenizer: one id per UTF-8 byte.
  #[napi(factory)]
  pub fn bytes() -> Self {
    Self::new(Tokenizer::Bytes)
  }

  /// Encodes `text` into `out` and returns the id count (see the module comment).
  #[napi]
  pub fn encode(&mut self, text: String, out: Uint32ArraySlice) -> Result<u32> {
    self.encode_str(&text)?;
    self.take_ids(out)
  }

  /// A completions body's text prompt (a string, or a batch of one), read and tokenized from the
  /// body's bytes: the ids as for encode, the prompt value's byte span in `span[0]..span[1]`.
  /// -1 when the body is not that plain case (the caller parses it whole).
  #[napi]
  pub fn encode_prompt_body(&mut self, body: &[u8], out: Uint32ArraySlice, span: Uint32ArraySlice) -> Result<i64> {
    let Some(p) = prompt::scan_text_prompt(body) else { return Ok(-1) };
    self.encode_str(&p.text)?;
    write_span(span, p.start, p.end)?;
    Ok(i64::from(self.take_ids(out)?))
  }

  /// The last encode's ids into `out` (when they fit); returns their count.
  #[napi]
  pub fn take_ids(&mut self, mut out: Uint32ArraySlice) -> Result<u32> {
    let ids = self.ids.as_slice();
    let count = u32::try_from(ids.len()).map_err(|_| range_error("the text has more than 2^32 tokens"))?;
    // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is an
    // array of the wrapper's own, never an input.
    let out = unsafe { out.as_mut() };
    if let Some(dst) = out.get_mut(..ids.len()) {
      dst.copy_from_slice(ids);
      self.ids.shrink_to(KEPT_IDS);
    }
    Ok(count)
  }

  /// The text of `ids`.
  #[napi]
  pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
    self.inner.decode(ids, skip_special_tokens).map_err(Error::from_reason)
  }
}

impl NativeTokenizer {
  fn new(inner: Tokenizer) -> Self {
    Self { inner: Arc::new(inner), ids: TokenIds::default() }
  }

  /// Encodes into the kept ids (see take_ids).
  pub(super) fn encode_str(&mut self, text: &str) -> Result<()> {
    self.ids.clear();
    self.inner.encode_into(text, &mut self.ids).map_err(Error::from_reason)
  }
}

/// Writes a byte span into the caller's 2-entry array.
pub(super) fn write_span(mut span: Uint32ArraySlice, start: usize, end: usize) -> Result<()> {
  // SAFETY: as in take_ids.
  let span = unsafe { span.as_mut() };
  if span.len() < 2 || end > u32::MAX as usize {
    return Err(range_error("span must hold 2 entries and the body be under 4 GiB"));
  }
  span[0] = start as u32;
  span[1] = end as u32;
  Ok(())
}

fn read(json: &[u8]) -> Result<HfTokenizer> {
  let text = std::str::from_utf8(json).map_err(|e| Error::from_reason(format!("tokenizer.json is not UTF-8: {e}")))?;
  HfTokenizer::from_json(text).map_err(Error::from_reason)
}

/// Reads a tokenizer.json on a libuv thread: a 150k-token vocabulary takes about a second to
/// build, which must not stall the event loop of a running router.
#[napi(ts_return_type = "Promise<NativeTokenizer>")]
pub fn load_tokenizer(json: Buffer) -> AsyncTask<LoadTokenizer> {
  AsyncTask::new(LoadTokenizer { json })
}

pub struct LoadTokenizer {
  json: Buffer,
}

impl Task for LoadTokenizer {
  type Output = HfTokenizer;
  type JsValue = NativeTokenizer;

  fn compute(&mut self) -> Result<HfTokenizer> {
    read(&self.json)
  }

  fn resolve(&mut self, _env: Env, output: HfTokenizer) -> Result<NativeTokenizer> {
    Ok(NativeTokenizer::new(Tokenizer::Hf(output)))
  }
}
