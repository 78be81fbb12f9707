//! `NativeTokenizer`: a text encoder (crate::tokenize: a HuggingFace tokenizer.json or the byte
//! tokenizer) behind src/core/tokenizer.ts. Conversions and checks only. Ids go into an array of
//! the caller's; when it is too small the call returns the count and keeps the ids for takeIds.

use std::sync::Arc;
use std::time::Instant;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{coded, range_error, Code, Result};
use crate::chat::request::read_chat_request;
use crate::chat::ChatTemplate;
use crate::prompt;
use crate::tokenize::prefix_cache::EncodeScratch;
use crate::tokenize::{Encoder, HfTokenizer, TokenIds, Tokenizer};

/// A buffer this large is kept between calls; a larger one is dropped after its call.
const KEPT_IDS: usize = 1 << 16;

#[napi]
pub struct NativeTokenizer {
  inner: Encoder,
  /// The last encode's ids, for a caller whose array was too small.
  ids: TokenIds,
  scratch: EncodeScratch,
}

/// How many entries cacheStats writes.
pub const CACHE_STATS: usize = 7;

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
  /// body's bytes: the ids as for encode, the prompt value's byte span in `span[0]..span[1]`,
  /// and the microseconds spent reading and tokenizing in `timings` (see StageTimer). -1 when
  /// the body is not that plain case (the caller parses it whole).
  #[napi]
  pub fn encode_prompt_body(&mut self, body: &[u8], out: Uint32ArraySlice, span: Uint32ArraySlice, timings: Float64ArraySlice) -> Result<i64> {
    let mut timer = StageTimer::start();
    let Some(p) = prompt::scan_text_prompt(body) else { return Ok(-1) };
    timer.lap(Stage::Read);
    self.encode_str(&p.text)?;
    timer.lap(Stage::Tokenize);
    write_span(span, p.start, p.end)?;
    timer.write(timings)?;
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
    self.inner.tokenizer.decode(ids, skip_special_tokens).map_err(|e| coded(Code::Tokenizer, e))
  }

  /// The same tokenizer with a prefix cache of its own, of at most `max_bytes` (0: none).
  #[napi]
  pub fn with_prefix_cache(&self, max_bytes: f64) -> Result<NativeTokenizer> {
    if !(max_bytes.is_finite() && max_bytes >= 0.0 && max_bytes <= 2f64.powi(48)) {
      return Err(range_error(format!("maxBytes must be a byte count in [0, 2^48], got {max_bytes}")));
    }
    Ok(Self::of(self.inner.with_cache(max_bytes as usize)))
  }

  /// The prefix cache's counters into `out` ([hits, misses, reused tokens, encoded tokens,
  /// evictions, bytes, pieces]); false when this tokenizer has none.
  #[napi]
  pub fn cache_stats(&self, mut out: Float64ArraySlice) -> Result<bool> {
    let Some(s) = self.inner.cache_stats() else { return Ok(false) };
    // SAFETY: as in take_ids.
    let out = unsafe { out.as_mut() };
    let dst = out.get_mut(..CACHE_STATS).ok_or_else(|| range_error(format!("out must hold {CACHE_STATS} entries")))?;
    dst.copy_from_slice(&[s.hits, s.misses, s.reused_tokens, s.encoded_tokens, s.evictions, s.bytes, s.pieces].map(|v| v as f64));
    Ok(true)
  }

  /// encodePromptBody on a libuv thread (the body copied first): the read, the tokenizing and
  /// the cache lookup leave the event loop free. Null when the body is not the plain case.
  #[napi(ts_return_type = "Promise<NativeEncodedBody | null>")]
  pub fn encode_prompt_body_async(&self, body: &[u8]) -> AsyncTask<EncodeBodyTask> {
    AsyncTask::new(EncodeBodyTask { encoder: self.inner.clone(), body: body.to_vec(), template: None })
  }
}

impl NativeTokenizer {
  fn new(inner: Tokenizer) -> Self {
    Self::of(Encoder { tokenizer: Arc::new(inner), cache: None })
  }

  fn of(inner: Encoder) -> Self {
    Self { inner, ids: TokenIds::default(), scratch: EncodeScratch::default() }
  }

  pub(super) fn encoder(&self) -> &Encoder {
    &self.inner
  }

  /// Encodes into the kept ids (see take_ids).
  pub(super) fn encode_str(&mut self, text: &str) -> Result<()> {
    self.ids.clear();
    self.inner.encode_into(text, &mut self.scratch, &mut self.ids).map(|_| ()).map_err(|e| coded(Code::Tokenizer, e))
  }
}

/// A request body read and tokenized off the event loop (see encodePromptBodyAsync and
/// NativeChatTemplate.encodeBodyAsync).
#[napi(object)]
pub struct NativeEncodedBody {
  pub ids: Uint32Array,
  /// Byte span of the prompt's (or the messages') value in the body.
  pub start: u32,
  pub end: u32,
  /// Microseconds of [read, render, tokenize], as the synchronous calls write them.
  pub timings: Vec<f64>,
}

pub struct EncodeBodyTask {
  encoder: Encoder,
  body: Vec<u8>,
  /// A chat body (rendered with this template); None: a completions text prompt.
  template: Option<Arc<ChatTemplate>>,
}

impl EncodeBodyTask {
  pub(super) fn chat(encoder: Encoder, body: Vec<u8>, template: Arc<ChatTemplate>) -> Self {
    Self { encoder, body, template: Some(template) }
  }
}

/// What a body gave: its ids, span and timings; an error coded as the synchronous call's.
type EncodedBody = std::result::Result<Option<(Vec<u32>, usize, usize, [f64; 3])>, (Code, String)>;

impl Task for EncodeBodyTask {
  type Output = EncodedBody;
  type JsValue = Option<NativeEncodedBody>;

  fn compute(&mut self) -> napi::Result<Self::Output> {
    let mut timer = StageTimer::start();
    let mut ids = TokenIds::default();
    let mut scratch = EncodeScratch::default();
    let span = match &self.template {
      None => {
        let Some(p) = prompt::scan_text_prompt(&self.body) else { return Ok(Ok(None)) };
        timer.lap(Stage::Read);
        if let Err(e) = self.encoder.encode_into(&p.text, &mut scratch, &mut ids) {
          return Ok(Err((Code::Tokenizer, e)));
        }
        (p.start, p.end)
      }
      Some(template) => {
        let Some(req) = read_chat_request(&self.body) else { return Ok(Ok(None)) };
        timer.lap(Stage::Read);
        let text = match template.render(&req.input()) {
          Ok(t) => t,
          Err(e) => return Ok(Err((Code::ChatTemplate, e))),
        };
        timer.lap(Stage::Render);
        if let Err(e) = self.encoder.encode_into(&text, &mut scratch, &mut ids) {
          return Ok(Err((Code::Tokenizer, e)));
        }
        (req.start, req.end)
      }
    };
    timer.lap(Stage::Tokenize);
    if span.1 > u32::MAX as usize {
      return Ok(Err((Code::Tokenizer, "the body must be under 4 GiB".into())));
    }
    Ok(Ok(Some((ids.as_slice().to_vec(), span.0, span.1, timer.us))))
  }

  fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
    match output {
      Ok(None) => Ok(None),
      Ok(Some((ids, start, end, us))) => Ok(Some(NativeEncodedBody { ids: Uint32Array::new(ids), start: start as u32, end: end as u32, timings: us.to_vec() })),
      // Rejected with the same code as the synchronous call.
      Err((code, e)) => Err(napi::Error::from(JsError::from(coded(code, e)).into_unknown(env))),
    }
  }
}

/// The stages of reading a request natively, in the order of the timings array.
#[derive(Clone, Copy)]
pub(super) enum Stage {
  /// The body's JSON read and the prompt or messages taken out.
  Read = 0,
  /// The chat template rendered.
  Render = 1,
  Tokenize = 2,
}

/// Microseconds per stage of one call, written to the caller's `timings` ([read, render,
/// tokenize]; a stage the call does not have is 0), as the routing core reports its phases.
pub(super) struct StageTimer {
  last: Instant,
  pub(super) us: [f64; 3],
}

impl StageTimer {
  pub(super) fn start() -> Self {
    Self { last: Instant::now(), us: [0.0; 3] }
  }

  pub(super) fn lap(&mut self, stage: Stage) {
    let now = Instant::now();
    self.us[stage as usize] = now.duration_since(self.last).as_secs_f64() * 1e6;
    self.last = now;
  }

  pub(super) fn write(&self, mut timings: Float64ArraySlice) -> Result<()> {
    // SAFETY: as in take_ids.
    let timings = unsafe { timings.as_mut() };
    let dst = timings.get_mut(..3).ok_or_else(|| range_error("timings must hold 3 entries"))?;
    dst.copy_from_slice(&self.us);
    Ok(())
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
  let text = std::str::from_utf8(json).map_err(|e| coded(Code::Tokenizer, format!("tokenizer.json is not UTF-8: {e}")))?;
  HfTokenizer::from_json(text).map_err(|e| coded(Code::Tokenizer, e))
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
  type Output = Result<HfTokenizer>;
  type JsValue = NativeTokenizer;

  fn compute(&mut self) -> napi::Result<Self::Output> {
    Ok(read(&self.json))
  }

  fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<NativeTokenizer> {
    match output {
      Ok(t) => Ok(NativeTokenizer::new(Tokenizer::Hf(t))),
      // Rejected with the same code as the synchronous load.
      Err(e) => Err(napi::Error::from(JsError::from(e).into_unknown(env))),
    }
  }
}
