//! `NativeChatTemplate`: a compiled chat template (crate::chat) behind src/core/chat-template.ts.
//! Conversions and checks only.

use minijinja::Value;
use napi::bindgen_prelude::*;
use napi_derive::napi;

use std::sync::Arc;

use super::errors::{coded, type_error, Code, Result};
use super::tokenize::{write_span, EncodeBodyTask, NativeTokenizer, Stage, StageTimer};
use crate::chat::request::read_chat_request;
use crate::chat::ChatTemplate;

#[napi]
pub struct NativeChatTemplate {
  inner: Arc<ChatTemplate>,
}

#[napi]
impl NativeChatTemplate {
  /// Compiles `source`. `globals`: a JSON object of the variables every render gets (the
  /// tokenizer's special tokens).
  #[napi(constructor)]
  pub fn new(source: String, globals: String) -> Result<Self> {
    let globals: Value = serde_json::from_str(&globals).map_err(|e| type_error(format!("globals must be a JSON object: {e}")))?;
    let pairs = match globals.try_iter() {
      Ok(keys) if globals.kind() == minijinja::value::ValueKind::Map => {
        keys.map(|k| (k.as_str().unwrap_or_default().to_owned(), globals.get_item(&k).unwrap_or_default())).collect()
      }
      _ => return Err(type_error("globals must be a JSON object")),
    };
    Ok(Self { inner: Arc::new(ChatTemplate::new(&source, pairs).map_err(|e| coded(Code::ChatTemplate, e))?) })
  }

  /// Renders a JSON object shaped as a chat request (`messages`, and optionally `tools`,
  /// `chat_template_kwargs`, `add_generation_prompt`), messages checked as in a request.
  #[napi]
  pub fn render_json(&self, input: &[u8]) -> Result<String> {
    let req =
      read_chat_request(input).ok_or_else(|| type_error("not a chat request: messages must be a non-empty array of messages with a role and text content"))?;
    self.inner.render(&req.input()).map_err(|e| coded(Code::ChatTemplate, e))
  }

  /// A chat request body's prompt text, `span` set to where its `messages` stand; null when the
  /// body is not the plain case (the caller parses it whole).
  #[napi]
  pub fn render_body(&self, body: &[u8], span: Uint32ArraySlice) -> Result<Option<String>> {
    let Some(req) = read_chat_request(body) else { return Ok(None) };
    let text = self.inner.render(&req.input()).map_err(|e| coded(Code::ChatTemplate, e))?;
    write_span(span, req.start, req.end)?;
    Ok(Some(text))
  }

  /// A chat request body rendered and tokenized in one call: the ids as NativeTokenizer.encode
  /// gives them, `span` set to where `messages` stand, the microseconds of each stage in
  /// `timings` (read, render, tokenize); -1 when the body is not the plain case.
  #[napi]
  pub fn encode_body(
    &self,
    tokenizer: &mut NativeTokenizer,
    body: &[u8],
    out: Uint32ArraySlice,
    span: Uint32ArraySlice,
    timings: Float64ArraySlice,
  ) -> Result<i64> {
    let mut timer = StageTimer::start();
    let Some(req) = read_chat_request(body) else { return Ok(-1) };
    timer.lap(Stage::Read);
    let text = self.inner.render(&req.input()).map_err(|e| coded(Code::ChatTemplate, e))?;
    timer.lap(Stage::Render);
    tokenizer.encode_str(&text)?;
    timer.lap(Stage::Tokenize);
    write_span(span, req.start, req.end)?;
    timer.write(timings)?;
    Ok(i64::from(tokenizer.take_ids(out)?))
  }

  /// encodeBody on a libuv thread (the body copied first), through `tokenizer` and its prefix
  /// cache: rendering and tokenizing a long conversation leave the event loop free. Null when
  /// the body is not the plain case.
  #[napi(ts_return_type = "Promise<NativeEncodedBody | null>")]
  pub fn encode_body_async(&self, tokenizer: &NativeTokenizer, body: &[u8]) -> AsyncTask<EncodeBodyTask> {
    AsyncTask::new(EncodeBodyTask::chat(tokenizer.encoder().clone(), body.to_vec(), self.inner.clone()))
  }
}
