//! Token-id prompts read straight from a request body's bytes. Parsing a completions body in
//! JavaScript builds a string of the whole body and one array element per token before the
//! router copies the ids into a Uint32Array; here serde_json validates the body once and
//! locates the top-level `prompt`, whose digits become u32s directly. The caller then parses
//! only the rest of the body, and engines still receive the prompt's own bytes.
//!
//! Only the plain case is taken: one valid JSON object with exactly one `prompt` key (escaped
//! spellings included, as JSON.parse reads them) whose value is a non-empty array of integers
//! in u32 range written as plain digits. Anything else (text prompts, batches, `1.0`, `-0`,
//! duplicate keys, invalid JSON) returns None, and the caller parses the whole body as before.
//!
//! Text prompts (`scan_text_prompt`) are read the same way: a string, or an array of exactly one
//! string, handed over unescaped (borrowed from the body when it has no escapes) for the
//! tokenizer, with the span of the prompt's value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Where the prompt's array stands in the body, and how many ids it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenPrompt {
  /// Byte offset of the array's `[`.
  pub start: usize,
  /// Byte offset just past its `]`.
  pub end: usize,
  pub count: usize,
}

/// Room `out` needs for any body of `body_len` bytes: every id takes at least a digit and a
/// separator.
pub fn max_tokens_in(body_len: usize) -> usize {
  body_len / 2 + 1
}

/// The body's token-id prompt, its ids written to `out[..count]` (see the module comment for
/// when it is None). `out` shorter than `max_tokens_in(body.len())` may make it None.
pub fn scan_token_prompt(body: &[u8], out: &mut [u32]) -> Option<TokenPrompt> {
  let raw = the_prompt(body, starts_flat_array)?.get().as_bytes();
  let start = raw.as_ptr() as usize - body.as_ptr() as usize;
  let count = parse_flat_ids(raw, out)?;
  Some(TokenPrompt { start, end: start + raw.len(), count })
}

/// Room `write_ids_json` needs for `count` ids: up to 10 digits and a comma each, and brackets.
pub fn max_ids_json_len(count: usize) -> usize {
  count * 11 + 2
}

/// `ids` as a JSON array (`[1,2,3]`, the text JSON.stringify writes for them) into `out` (at
/// least `max_ids_json_len(ids.len())` bytes); returns the length written.
pub fn write_ids_json(ids: &[u32], out: &mut [u8]) -> usize {
  let out = &mut out[..max_ids_json_len(ids.len())];
  out[0] = b'[';
  let mut at = 1;
  for (i, &id) in ids.iter().enumerate() {
    if i > 0 {
      out[at] = b',';
      at += 1;
    }
    // Digits written back to front at their final place, two at a time: no call per id (in the
    // addon, a formatting library's function and memcpy are each an indirect call, 3x the loop).
    let len = decimal_len(id);
    let digits = &mut out[at..at + len];
    let mut v = id;
    let mut end = len;
    while v >= 100 {
      let pair = (v % 100) as usize * 2;
      v /= 100;
      digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
      end -= 2;
    }
    if v >= 10 {
      let pair = v as usize * 2;
      digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
      digits[end - 1] = b'0' + v as u8;
    }
    at += len;
  }
  out[at] = b']';
  at + 1
}

/// "00", "01", ... "99".
const DIGIT_PAIRS: [u8; 200] = {
  let mut t = [0u8; 200];
  let mut i = 0;
  while i < 100 {
    t[i * 2] = b'0' + (i / 10) as u8;
    t[i * 2 + 1] = b'0' + (i % 10) as u8;
    i += 1;
  }
  t
};

fn decimal_len(v: u32) -> usize {
  match v {
    0..=9 => 1,
    10..=99 => 2,
    100..=999 => 3,
    1_000..=9_999 => 4,
    10_000..=99_999 => 5,
    100_000..=999_999 => 6,
    1_000_000..=9_999_999 => 7,
    10_000_000..=99_999_999 => 8,
    100_000_000..=999_999_999 => 9,
    _ => 10,
  }
}

/// A text prompt and where its value stands in the body.
#[derive(Debug, PartialEq, Eq)]
pub struct TextPrompt<'a> {
  pub text: Cow<'a, str>,
  /// Byte offsets of the prompt's value (the string, or the one-string array): [start, end).
  pub start: usize,
  pub end: usize,
}

/// The body's text prompt: a string, or an array of exactly one string (see the module comment).
pub fn scan_text_prompt(body: &[u8]) -> Option<TextPrompt<'_>> {
  let raw = the_prompt(body, starts_text)?.get();
  let start = raw.as_ptr() as usize - body.as_ptr() as usize;
  let text = if raw.starts_with('[') {
    let mut texts: Vec<Text> = serde_json::from_str(raw).ok()?;
    if texts.len() != 1 {
      return None; // a batch: the caller explains why it is refused
    }
    texts.pop()?.0
  } else {
    serde_json::from_str::<Text>(raw).ok()?.0
  };
  Some(TextPrompt { text, start, end: start + raw.len() })
}

/// The only top-level `prompt` of a valid JSON object body, when `wanted` accepts its text.
fn the_prompt(body: &[u8], wanted: fn(&[u8]) -> bool) -> Option<&RawValue> {
  let mut de = serde_json::Deserializer::from_slice(body);
  let top = TopLevelSeed(wanted).deserialize(&mut de).ok()?;
  de.end().ok()?;
  if top.prompts != 1 {
    return None;
  }
  top.prompt
}

/// The ids of `[d, d, ...]` (already valid JSON): None unless every element is plain digits in
/// u32 range, or when the array is empty or `out` too short.
fn parse_flat_ids(text: &[u8], out: &mut [u32]) -> Option<usize> {
  let mut i = skip_space(text, 0);
  if text.get(i) != Some(&b'[') {
    return None;
  }
  i = skip_space(text, i + 1);
  let mut n = 0;
  loop {
    let digits_start = i;
    let mut value: u64 = 0;
    while let Some(&c) = text.get(i) {
      if !c.is_ascii_digit() {
        break;
      }
      value = value * 10 + u64::from(c - b'0');
      if value > u64::from(u32::MAX) {
        return None;
      }
      i += 1;
    }
    if i == digits_start || n >= out.len() {
      return None; // not a plain non-negative integer (or no room)
    }
    out[n] = value as u32;
    n += 1;
    i = skip_space(text, i);
    match text.get(i) {
      Some(b',') => i = skip_space(text, i + 1),
      Some(b']') => return Some(n),
      _ => return None, // a fraction or an exponent
    }
  }
}

/// `[` then a digit (after spaces): the only start parse_flat_ids can accept.
fn starts_flat_array(text: &[u8]) -> bool {
  text.first() == Some(&b'[') && text.get(skip_space(text, 1)).is_some_and(u8::is_ascii_digit)
}

/// A string, or `[` then a string (after spaces).
fn starts_text(text: &[u8]) -> bool {
  match text.first() {
    Some(b'"') => true,
    Some(b'[') => text.get(skip_space(text, 1)) == Some(&b'"'),
    _ => false,
  }
}

fn skip_space(text: &[u8], mut i: usize) -> usize {
  while matches!(text.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
    i += 1;
  }
  i
}

/// The top-level object, reduced to its `prompt` values (raw text, borrowed from the body).
struct TopLevel<'a> {
  prompt: Option<&'a RawValue>,
  prompts: u32,
}

/// Reads the top-level object, stopping at a `prompt` that `.0` does not want.
struct TopLevelSeed(fn(&[u8]) -> bool);

impl<'de> DeserializeSeed<'de> for TopLevelSeed {
  type Value = TopLevel<'de>;

  fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopLevel<'de>, D::Error> {
    d.deserialize_map(self)
  }
}

impl<'de> Visitor<'de> for TopLevelSeed {
  type Value = TopLevel<'de>;

  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a JSON object")
  }

  fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
    let mut top = TopLevel { prompt: None, prompts: 0 };
    while let Some(IsPrompt(is_prompt)) = map.next_key()? {
      // Every value is validated and skipped without being built.
      let value: &'de RawValue = map.next_value()?;
      if is_prompt {
        // Not the kind of prompt asked for: stop here, the caller parses it all.
        if !(self.0)(value.get().as_bytes()) {
          return Err(de::Error::custom("not the prompt asked for"));
        }
        top.prompts += 1;
        top.prompt = Some(value);
      }
    }
    Ok(top)
  }
}

/// Whether a key is `prompt`, however it was escaped.
struct IsPrompt(bool);

impl<'de> Deserialize<'de> for IsPrompt {
  fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
    d.deserialize_str(IsPromptVisitor)
  }
}

struct IsPromptVisitor;

impl Visitor<'_> for IsPromptVisitor {
  type Value = IsPrompt;

  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a key")
  }

  fn visit_str<E: de::Error>(self, key: &str) -> Result<IsPrompt, E> {
    Ok(IsPrompt(key == "prompt"))
  }
}

/// A JSON string (a value or a key), borrowed from the body unless it has escapes.
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
  fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
    d.deserialize_str(TextVisitor)
  }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
  type Value = Text<'de>;

  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a string")
  }

  fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
    Ok(Text(Cow::Borrowed(text)))
  }

  fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
    Ok(Text(Cow::Owned(text.to_owned())))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn scan(body: &str) -> Option<(Vec<u32>, &str)> {
    let mut out = vec![0; max_tokens_in(body.len())];
    scan_token_prompt(body.as_bytes(), &mut out).map(|p| (out[..p.count].to_vec(), &body[p.start..p.end]))
  }

  #[test]
  fn reads_a_flat_prompt_and_its_span() {
    let body = r#"{"model":"m","prompt":[1, 2,3 ,4294967295],"max_tokens":4}"#;
    assert_eq!(scan(body), Some((vec![1, 2, 3, 4_294_967_295], "[1, 2,3 ,4294967295]")));
    let spaced = "{ \"prompt\" :\n [ 0 ] }";
    assert_eq!(scan(spaced), Some((vec![0], "[ 0 ]")));
  }

  #[test]
  fn an_escaped_key_is_still_the_prompt() {
    assert_eq!(scan(r#"{"pr\u006fmpt":[7,8]}"#), Some((vec![7, 8], "[7,8]")));
  }

  #[test]
  fn leaves_every_other_case_to_the_caller() {
    for body in [
      r#"{"prompt":"text"}"#,
      r#"{"prompt":[[1,2]]}"#,
      r#"{"prompt":[]}"#,
      r#"{"prompt":[1.0]}"#,
      r#"{"prompt":[1e3]}"#,
      r#"{"prompt":[-0]}"#,
      r#"{"prompt":[-1]}"#,
      r#"{"prompt":[4294967296]}"#,
      r#"{"prompt":[1,"2"]}"#,
      r#"{"prompt":[1],"prompt":[2]}"#,
      r#"{"model":"m"}"#,
      r#"[{"prompt":[1]}]"#,
      r#"{"prompt":[1]} x"#,
      r#"{"prompt":[1],}"#,
      r#"{"prompt":[01]}"#,
      "{\"prompt\":[1],\"s\":\"\u{0}\"}",
    ] {
      assert_eq!(scan(body), None, "{body}");
    }
    // Invalid UTF-8 anywhere: JavaScript's decoder would replace it, so the caller decides.
    let mut out = [0u32; 8];
    assert_eq!(scan_token_prompt(b"{\"s\":\"\xff\",\"prompt\":[1]}", &mut out), None);
  }

  #[test]
  fn a_nested_prompt_is_not_the_prompt() {
    assert_eq!(scan(r#"{"nvext":{"prompt":[9]},"prompt":[1]}"#), Some((vec![1], "[1]")));
    assert_eq!(scan(r#"{"nvext":{"prompt":[9]}}"#), None);
  }

  #[test]
  fn needs_room_for_every_id() {
    let mut out = [0u32; 2];
    assert_eq!(scan_token_prompt(br#"{"prompt":[1,2,3]}"#, &mut out), None);
  }

  fn text(body: &str) -> Option<(String, &str)> {
    scan_text_prompt(body.as_bytes()).map(|p| (p.text.into_owned(), &body[p.start..p.end]))
  }

  #[test]
  fn reads_a_text_prompt_borrowed_unless_escaped() {
    assert_eq!(text(r#"{"model":"m","prompt":"hello world","n":1}"#), Some(("hello world".into(), r#""hello world""#)));
    assert_eq!(text(r#"{"prompt": [ "one" ] }"#), Some(("one".into(), r#"[ "one" ]"#)));
    assert_eq!(text(r#"{"prompt":"a\nb\u00e9\"\ud83d\ude42"}"#), Some(("a\nb\u{e9}\"\u{1f642}".into(), r#""a\nb\u00e9\"\ud83d\ude42""#)));
    assert!(matches!(scan_text_prompt(br#"{"prompt":"plain"}"#).unwrap().text, Cow::Borrowed(_)));
    assert_eq!(text(r#"{"prompt":""}"#), Some((String::new(), r#""""#)));
  }

  #[test]
  fn leaves_other_text_prompts_to_the_caller() {
    for body in [
      r#"{"prompt":["a","b"]}"#,
      r#"{"prompt":[]}"#,
      r#"{"prompt":[1,2]}"#,
      r#"{"prompt":5}"#,
      r#"{"prompt":"a","prompt":"b"}"#,
      r#"{"prompt":"\ud800"}"#,
      r#"{"prompt":"a"} x"#,
      r#"{"model":"m"}"#,
    ] {
      assert_eq!(text(body), None, "{body}");
    }
  }

  #[test]
  fn writes_ids_as_json_stringify_does() {
    let ids = [0, 7, 10, 4_294_967_295, 123_456];
    let mut out = vec![0u8; max_ids_json_len(ids.len())];
    let len = write_ids_json(&ids, &mut out);
    assert_eq!(&out[..len], b"[0,7,10,4294967295,123456]");
    let max = [u32::MAX; 3];
    let mut out = vec![0u8; max_ids_json_len(3)];
    assert_eq!(write_ids_json(&max, &mut out), out.len() - 1); // the last comma's room is spare
    assert_eq!(write_ids_json(&[], &mut out), 2);
    assert_eq!(&out[..2], b"[]");
  }
}
