//! `NativeTokenizer`: a HuggingFace tokenizer.json (crate::tokenize) behind `HfTokenizer`
//! (src/preprocess/hf-tokenizer.ts). Conversions and checks only.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::range_error;
use crate::tokenize::{HfTokenizer, TokenIds};

/// A buffer this large is kept between calls; a larger one is dropped after its call.
const KEPT_IDS: usize = 1 << 16;

#[napi]
pub struct NativeTokenizer {
  inner: Arc<HfTokenizer>,
  /// The last encode's ids, for a caller whose array was too small.
  ids: TokenIds,
}

#[napi]
impl NativeTokenizer {
  /// Reads a tokenizer.json from its UTF-8 bytes, on the calling thread (see loadTokenizer).
  #[napi(factory)]
  pub fn from_json(json: &[u8]) -> Result<Self> {
    Ok(Self::new(read(json)?))
  }

  /// Encodes `text` into `out` and returns the id count. When the count is larger than
  /// out.length, nothing is written: takeIds(larger) hands over the same ids.
  #[napi]
  pub fn encode(&mut self, text: String, out: Uint32ArraySlice) -> Result<u32> {
    self.ids.clear();
    self.inner.encode_into(&text, &mut self.ids).map_err(Error::from_reason)?;
    self.take_ids(out)
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
  fn new(inner: HfTokenizer) -> Self {
    Self { inner: Arc::new(inner), ids: TokenIds::default() }
  }
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
    Ok(NativeTokenizer::new(output))
  }
}
