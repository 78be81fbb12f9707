//! HuggingFace tokenizers (a model's `tokenizer.json`) for the router's text prompts: encode to
//! token ids, decode back to text. See README.md for the invariants.

pub mod prefix_cache;
pub mod splits;
mod version;

use std::sync::{Arc, Mutex};

use tokenizers::pipeline::{EncodeOptions, PipelineToken, PipelineTokenizer};

use prefix_cache::{encode_cached, CacheStats, EncodeScratch, PrefixCache};
use splits::Splitter;

/// A loaded `tokenizer.json`. Immutable after loading; encode keeps no state between calls.
pub struct HfTokenizer {
  inner: PipelineTokenizer,
  options: EncodeOptions,
  /// Where its texts may be cut (for the prefix cache).
  splitter: Splitter,
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
    Ok(Self { inner, options: EncodeOptions::no_specials(), splitter: Splitter::for_tokenizer_json(text) })
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
  pub fn splitter(&self) -> &Splitter {
    match self {
      Self::Hf(t) => &t.splitter,
      Self::Bytes => &Splitter::Chunks,
    }
  }

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

  pub fn len(&self) -> usize {
    self.0.len()
  }

  pub fn is_empty(&self) -> bool {
    self.0.is_empty()
  }

  pub fn extend_from(&mut self, ids: &[u32]) {
    self.0.extend(ids.iter().map(|&id| PipelineToken::from(id)));
  }

  pub fn as_slice(&self) -> &[u32] {
    PipelineToken::cast_slice(&self.0)
  }

  /// Drops a large buffer once it is no longer needed (a 4M-token prompt's 16 MB).
  pub fn shrink_to(&mut self, capacity: usize) {
    self.0.shrink_to(capacity);
  }
}

/// A tokenizer and, when on, its prefix cache: what prompts are encoded with, on any thread.
#[derive(Clone)]
pub struct Encoder {
  pub tokenizer: Arc<Tokenizer>,
  pub cache: Option<Arc<Mutex<PrefixCache>>>,
}

impl Encoder {
  /// The same tokenizer with a cache of its own of `budget` bytes (0: none).
  pub fn with_cache(&self, budget: usize) -> Self {
    Self { tokenizer: self.tokenizer.clone(), cache: (budget > 0).then(|| Arc::new(Mutex::new(PrefixCache::new(budget)))) }
  }

  /// Appends the ids of `text` to `out` (exactly the tokenizer's); returns how many came from the cache.
  pub fn encode_into(&self, text: &str, scratch: &mut EncodeScratch, out: &mut TokenIds) -> Result<usize, String> {
    match &self.cache {
      Some(cache) => encode_cached(&self.tokenizer, self.tokenizer.splitter(), cache, text, scratch, out),
      None => self.tokenizer.encode_into(text, out).map(|()| 0),
    }
  }

  pub fn cache_stats(&self) -> Option<CacheStats> {
    self.cache.as_ref().map(|c| c.lock().unwrap_or_else(std::sync::PoisonError::into_inner).stats())
  }
}

#[cfg(test)]
mod tests;
