//! HuggingFace tokenizers (a model's `tokenizer.json`) for the router's text prompts: encode to
//! token ids, decode back to text. See README.md for the invariants.

mod version;

use tokenizers::pipeline::{EncodeOptions, PipelineToken, PipelineTokenizer};

/// A loaded `tokenizer.json`. Immutable after loading; encode keeps no state between calls.
pub struct HfTokenizer {
  inner: PipelineTokenizer,
  options: EncodeOptions,
}

impl HfTokenizer {
  /// Reads a `tokenizer.json` (its text). Files older than the format the reader takes (every
  /// file the Hub serves today says `"version": "1.0"`) are upgraded in memory first, as
  /// `tokenizers` itself does with them.
  pub fn from_json(text: &str) -> Result<Self, String> {
    let inner = match version::of(text)?.as_deref() {
      Some(version::CANONICAL) => tokenizers::from_json(text),
      _ => {
        let canonical = tokenizers::canonicalize_str(text).map_err(|e| format!("cannot read this tokenizer.json: {e}"))?;
        tokenizers::from_json(&canonical)
      }
    }
    .map_err(|e| format!("cannot read this tokenizer.json: {e}"))?;
    // Special tokens a post-processor would add (BOS, EOS) are not added: the chat template's
    // text carries them, and HuggingFace's chat pipeline tokenizes it without adding any.
    Ok(Self { inner, options: EncodeOptions::no_specials() })
  }

  /// Appends the ids of `text` to `out`. Special tokens written in the text (`<|im_start|>`)
  /// become their ids, as HuggingFace's `encode(text, add_special_tokens=False)` does.
  pub fn encode_into(&self, text: &str, out: &mut TokenIds) -> Result<(), String> {
    self.inner.encode_into(text, &self.options, &mut out.0).map_err(|e| format!("cannot tokenize the text: {e}"))
  }

  /// The ids of `text` (a convenience over `encode_into`).
  pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
    let mut out = TokenIds::default();
    self.encode_into(text, &mut out)?;
    Ok(out.as_slice().to_vec())
  }

  /// The text of `ids`. Ids outside the vocabulary are skipped and invalid UTF-8 (a character
  /// cut between tokens) becomes U+FFFD, as HuggingFace's decode does.
  pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, String> {
    self.inner.decode(ids, skip_special_tokens).map_err(|e| format!("cannot decode the ids: {e}"))
  }
}

/// A text encoder: a HuggingFace tokenizer, or the built-in byte tokenizer (one id per UTF-8 byte,
/// as src/preprocess/byte-tokenizer.ts) of the simulated fleet.
pub enum Tokenizer {
  Hf(HfTokenizer),
  Bytes,
}

impl Tokenizer {
  pub fn encode_into(&self, text: &str, out: &mut TokenIds) -> Result<(), String> {
    match self {
      Self::Hf(t) => t.encode_into(text, out),
      Self::Bytes => {
        out.0.extend(text.bytes().map(|b| PipelineToken::from(u32::from(b))));
        Ok(())
      }
    }
  }

  pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, String> {
    match self {
      Self::Hf(t) => t.decode(ids, skip_special_tokens),
      Self::Bytes => {
        let bytes =
          ids.iter().map(|&id| u8::try_from(id).map_err(|_| format!("byte tokenizer ids are below 256, got {id}"))).collect::<Result<Vec<u8>, String>>()?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
      }
    }
  }
}

/// Token ids written by `encode_into`, kept between calls so encoding allocates nothing.
#[derive(Default)]
pub struct TokenIds(Vec<PipelineToken>);

impl TokenIds {
  pub fn clear(&mut self) {
    self.0.clear();
  }

  pub fn as_slice(&self) -> &[u32] {
    PipelineToken::cast_slice(&self.0)
  }

  /// Drops a large buffer once it is no longer needed (a 4M-token prompt's 16 MB).
  pub fn shrink_to(&mut self, capacity: usize) {
    self.0.shrink_to(capacity);
  }
}

#[cfg(test)]
mod tests;
