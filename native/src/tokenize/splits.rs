//! Where a text may be cut so that tokenizing the pieces one by one gives exactly the ids of the
//! whole: the prefix cache (prefix_cache.rs) reuses the ids of a recent prompt's pieces.
//!
//! A HuggingFace tokenizer first cuts the text around its added tokens (`<|im_start|>`, `<s>`),
//! matched leftmost-longest on the raw text, and normalizes, pre-tokenizes and encodes each piece
//! between them on its own; an added token is one id. So a cut just before an added token the
//! tokenizer itself matches there is invisible, provided that token does not reach into the text
//! before it (`lstrip`, `single_word`), is matched on raw text (`normalized: false`), and the piece
//! after the cut does not become the text's first (Metaspace's `prepend_scheme: first` looks at
//! that: the cut's piece starts with the token, so it never is). The byte tokenizer (one id per
//! byte) may be cut anywhere: it is cut every CHUNK bytes.

use aho_corasick::{AhoCorasick, MatchKind};
use serde::Deserialize;

/// The byte tokenizer's pieces: long enough that a lookup is cheap next to them.
const CHUNK: usize = 4096;

pub enum Splitter {
  /// Cut before these added tokens (their pattern indexes in `matcher` are `cut`).
  AddedTokens {
    matcher: AhoCorasick,
    cut: Vec<bool>,
  },
  Chunks,
  /// This tokenizer gives no safe cut (an added token that looks at its neighbours).
  Never,
}

#[derive(Deserialize)]
struct Added {
  content: String,
  #[serde(default)]
  single_word: bool,
  #[serde(default)]
  lstrip: bool,
  #[serde(default)]
  normalized: bool,
}

#[derive(Deserialize)]
struct AddedTokens {
  #[serde(default)]
  added_tokens: Vec<Added>,
}

impl Splitter {
  /// The cuts of a tokenizer.json (its text).
  pub fn for_tokenizer_json(text: &str) -> Self {
    let Ok(file) = serde_json::from_str::<AddedTokens>(text) else { return Self::Never };
    // The tokens matched on raw text, all of them: a cut is only where the tokenizer's own
    // leftmost-longest match over the same set starts.
    let raw: Vec<&Added> = file.added_tokens.iter().filter(|t| !t.normalized && !t.content.is_empty()).collect();
    // A single_word token is matched or not by its neighbours: no cut is claimed safe at all.
    if raw.is_empty() || raw.iter().any(|t| t.single_word) {
      return Self::Never;
    }
    let cut = raw.iter().map(|t| !t.lstrip && !t.content.starts_with(char::is_whitespace)).collect::<Vec<_>>();
    if !cut.contains(&true) {
      return Self::Never;
    }
    match AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(raw.iter().map(|t| t.content.as_bytes())) {
      Ok(matcher) => Self::AddedTokens { matcher, cut },
      Err(_) => Self::Never,
    }
  }

  /// Byte offsets in (0, text.len()) where the text may be cut, ascending.
  pub fn cuts(&self, text: &str, out: &mut Vec<usize>) {
    out.clear();
    match self {
      Self::AddedTokens { matcher, cut } => {
        out.extend(matcher.find_iter(text).filter(|m| m.start() > 0 && cut[m.pattern().as_usize()]).map(|m| m.start()));
      }
      Self::Chunks => {
        let mut at = CHUNK;
        while at < text.len() {
          while !text.is_char_boundary(at) {
            at += 1;
          }
          if at < text.len() {
            out.push(at);
          }
          at += CHUNK;
        }
      }
      Self::Never => {}
    }
  }
}
