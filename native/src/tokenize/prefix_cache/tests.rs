use super::*;
use crate::tokenize::HfTokenizer;

fn tiny_bpe() -> Tokenizer {
  let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../test/fixtures/tiny-bpe/tokenizer.json");
  Tokenizer::Hf(HfTokenizer::from_json(&std::fs::read_to_string(path).unwrap()).unwrap())
}

fn chat(system: &str, turns: &[&str]) -> String {
  let mut s = format!("<|im_start|>system\n{system}<|im_end|>\n");
  for (i, t) in turns.iter().enumerate() {
    let role = if i % 2 == 0 { "user" } else { "assistant" };
    s.push_str(&format!("<|im_start|>{role}\n{t}<|im_end|>\n"));
  }
  s.push_str("<|im_start|>assistant\n");
  s
}

fn whole(tok: &Tokenizer, text: &str) -> Vec<u32> {
  let mut out = TokenIds::default();
  tok.encode_into(text, &mut out).unwrap();
  out.as_slice().to_vec()
}

fn cached(tok: &Tokenizer, cache: &Mutex<PrefixCache>, text: &str) -> (Vec<u32>, usize) {
  let mut out = TokenIds::default();
  let reused = encode_cached(tok, tok.splitter(), cache, text, &mut EncodeScratch::default(), &mut out).unwrap();
  (out.as_slice().to_vec(), reused)
}

use std::sync::Mutex;

#[test]
fn a_shared_system_prompt_is_tokenized_once_and_the_ids_stay_the_tokenizers() {
  let tok = tiny_bpe();
  let cache = Mutex::new(PrefixCache::new(64 << 20));
  let system = "You are a careful assistant. ".repeat(400);
  let (first, reused) = cached(&tok, &cache, &chat(&system, &["hello there"]));
  assert_eq!(reused, 0);
  assert_eq!(first, whole(&tok, &chat(&system, &["hello there"])));
  let second_text = chat(&system, &["a different question"]);
  let (second, reused) = cached(&tok, &cache, &second_text);
  assert_eq!(second, whole(&tok, &second_text));
  let system_ids = whole(&tok, &format!("<|im_start|>system\n{system}<|im_end|>\n"));
  assert_eq!(reused, system_ids.len());
  let s = cache.lock().unwrap().stats();
  assert_eq!((s.hits, s.misses, s.reused_tokens as usize), (1, 1, system_ids.len()));
}

#[test]
fn an_edit_in_the_middle_reuses_only_the_turns_before_it() {
  let tok = tiny_bpe();
  let cache = Mutex::new(PrefixCache::new(64 << 20));
  let system = "rules ".repeat(500);
  let a = chat(&system, &["one", "two", "three", "four"]);
  let b = chat(&system, &["one", "TWO!", "three", "four"]);
  cached(&tok, &cache, &a);
  let (ids, reused) = cached(&tok, &cache, &b);
  assert_eq!(ids, whole(&tok, &b));
  assert_eq!(reused, whole(&tok, &chat(&system, &["one"])).len() - whole(&tok, "<|im_start|>assistant\n").len());
}

#[test]
fn the_cache_stays_within_its_bytes_evicting_the_least_recent() {
  let tok = Tokenizer::Bytes;
  let budget = 40_000;
  let cache = Mutex::new(PrefixCache::new(budget));
  for i in 0..50 {
    let text = format!("{i:04}").repeat(3000);
    let (ids, _) = cached(&tok, &cache, &text);
    assert_eq!(ids, whole(&tok, &text));
    let s = cache.lock().unwrap().stats();
    assert!(s.bytes <= budget as u64, "{s:?}");
  }
  let c = cache.lock().unwrap();
  assert!(c.stats().evictions > 0);
  // Every node left is reachable: its parent is live, and the map and the LRU list agree.
  assert_eq!(c.by_hash.len(), c.lru.len());
  assert_eq!(c.by_hash.len() as u64, c.stats().pieces);
  for n in c.nodes.iter().flatten() {
    if let Some(p) = n.parent {
      assert!(c.nodes[p as usize].as_ref().is_some_and(|p| p.children.iter().any(|&ch| c.nodes[ch as usize].as_ref().is_some_and(|x| x.hash == n.hash))));
    }
  }
}

#[test]
fn short_texts_and_texts_without_cuts_bypass_the_cache() {
  let tok = tiny_bpe();
  let cache = Mutex::new(PrefixCache::new(1 << 20));
  cached(&tok, &cache, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  cached(&tok, &cache, &"no special tokens at all ".repeat(200));
  let s = cache.lock().unwrap().stats();
  assert_eq!((s.hits, s.misses, s.pieces), (0, 0, 0));
}

#[test]
fn a_tokenizer_whose_added_tokens_look_at_their_neighbours_is_never_cut() {
  let json = r#"{"added_tokens": [{"id": 0, "content": "<x>", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": true}]}"#;
  let mut cuts = Vec::new();
  Splitter::for_tokenizer_json(json).cuts("a<x>b<x>c", &mut cuts);
  assert!(cuts.is_empty());
  let json = r#"{"added_tokens": [{"id": 0, "content": "<x>", "lstrip": true, "normalized": false}, {"id": 1, "content": "<y>", "normalized": false}]}"#;
  Splitter::for_tokenizer_json(json).cuts("a <x>b <y>c<y>", &mut cuts);
  assert_eq!(cuts, [7, 11]);
}
