//! A chat request's template input read straight from its body bytes: serde_json validates the
//! body once and hands over the top-level `messages` (built as template values, content flattened
//! to text), `tools`, `chat_template_kwargs` and `add_generation_prompt`, and where `messages`
//! stands, so the caller parses only the rest of the body.
//!
//! Only the plain case is taken: a valid JSON object whose `messages` is a non-empty array of
//! objects with a non-empty string `role` and a `content` that is a string, null, absent or an
//! array of `{"type": "text", "text": string}` parts, each of the keys above at most once.
//! Anything else returns None and the caller parses the body whole, which also writes the error
//! a client gets for a malformed message.

use std::fmt;

use minijinja::value::ValueKind;
use minijinja::Value;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::ChatInput;
use crate::prompt::Text;

pub struct ChatRequest {
  pub messages: Value,
  pub tools: Option<Value>,
  pub kwargs: Option<Value>,
  pub add_generation_prompt: bool,
  /// Byte span of the `messages` array in the body: [start, end).
  pub start: usize,
  pub end: usize,
}

impl ChatRequest {
  pub fn input(&self) -> ChatInput<'_> {
    ChatInput { messages: &self.messages, add_generation_prompt: self.add_generation_prompt, tools: self.tools.as_ref(), kwargs: self.kwargs.as_ref() }
  }
}

/// The chat request of `body` (see the module comment for when it is None).
pub fn read_chat_request(body: &[u8]) -> Option<ChatRequest> {
  let mut de = serde_json::Deserializer::from_slice(body);
  let top = TopLevel::deserialize(&mut de).ok()?;
  de.end().ok()?;
  let raw = top.messages?;
  let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
  let messages: Value = serde_json::from_str(raw.get()).ok()?;
  let non_null = |v: Option<Value>| v.filter(|v| !v.is_none());
  Some(ChatRequest {
    messages: template_messages(&messages)?,
    tools: non_null(top.tools),
    kwargs: non_null(top.kwargs),
    add_generation_prompt: top.add_generation_prompt.is_none_or(|raw| raw.get() != "false"),
    start,
    end: start + raw.get().len(),
  })
}

/// The messages as the template sees them: every field as sent, content as one text.
pub fn template_messages(messages: &Value) -> Option<Value> {
  if messages.kind() != ValueKind::Seq || messages.len() == Some(0) {
    return None;
  }
  let mut out = Vec::with_capacity(messages.len().unwrap_or(0));
  for m in messages.try_iter().ok()? {
    if m.kind() != ValueKind::Map {
      return None;
    }
    let role = m.get_attr("role").ok()?;
    if role.as_str().is_none_or(str::is_empty) {
      return None;
    }
    let given = m.get_attr("content").ok()?;
    if given.kind() == ValueKind::String {
      out.push(m); // already what the template sees: no copy
      continue;
    }
    let content = content_text(&given)?;
    let mut fields: Vec<(Value, Value)> = Vec::with_capacity(m.len().unwrap_or(0) + 1);
    let mut has_content = false;
    for key in m.try_iter().ok()? {
      if key.as_str() == Some("content") {
        has_content = true;
        fields.push((key, content.clone()));
      } else {
        let v = m.get_item(&key).ok()?;
        fields.push((key, v));
      }
    }
    if !has_content {
      fields.push((Value::from("content"), content));
    }
    out.push(Value::from_pairs(fields));
  }
  Some(Value::from(out))
}

/// A string as is, null or absent as "", text parts joined; anything else None.
fn content_text(content: &Value) -> Option<Value> {
  match content.kind() {
    ValueKind::String => Some(content.clone()),
    ValueKind::Undefined | ValueKind::None => Some(Value::from("")),
    ValueKind::Seq => {
      let mut text = String::new();
      for part in content.try_iter().ok()? {
        if part.kind() != ValueKind::Map || part.get_attr("type").ok()?.as_str() != Some("text") {
          return None;
        }
        text.push_str(part.get_attr("text").ok()?.as_str()?);
      }
      Some(Value::from(text))
    }
    _ => None,
  }
}

#[derive(Default)]
struct TopLevel<'a> {
  messages: Option<&'a RawValue>,
  tools: Option<Value>,
  kwargs: Option<Value>,
  add_generation_prompt: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
  fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
    d.deserialize_map(TopLevelVisitor)
  }
}

struct TopLevelVisitor;

impl<'de> Visitor<'de> for TopLevelVisitor {
  type Value = TopLevel<'de>;

  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a JSON object")
  }

  fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
    let mut top = TopLevel::default();
    let twice = || de::Error::custom("a key read twice");
    while let Some(Text(key)) = map.next_key()? {
      match key.as_ref() {
        "messages" if top.messages.is_none() => top.messages = Some(map.next_value()?),
        "tools" if top.tools.is_none() => top.tools = Some(map.next_value()?),
        "chat_template_kwargs" if top.kwargs.is_none() => top.kwargs = Some(map.next_value()?),
        "add_generation_prompt" if top.add_generation_prompt.is_none() => top.add_generation_prompt = Some(map.next_value()?),
        "messages" | "tools" | "chat_template_kwargs" | "add_generation_prompt" => return Err(twice()),
        // Every other value is validated and skipped without being built.
        _ => {
          map.next_value::<IgnoredAny>()?;
        }
      }
    }
    Ok(top)
  }
}
