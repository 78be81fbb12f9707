//! A tokenizer prefix cache: the ids of recent prompts' pieces (cut where splits.rs says the
//! tokenizer cannot merge across), kept as a tree of pieces keyed by a hash of the whole prefix
//! they end. A prompt that begins with a cached prefix copies that prefix's ids and tokenizes
//! only the rest; a hit is checked byte for byte, so a hash collision can only miss.
//!
//! Bounded by bytes (each piece's text, ids and bookkeeping), least recently used first; a piece
//! evicted takes the pieces after it along (they cannot be reached without it).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::Xxh3;

use super::splits::Splitter;
use super::{TokenIds, Tokenizer};

/// Texts shorter than this are tokenized whole: nothing worth saving, and they would crowd the cache.
pub const MIN_CACHED_TEXT: usize = 2048;
/// What a piece costs besides its text and ids (the node, its map and LRU entries).
const NODE_OVERHEAD: usize = 128;

/// What the cache did, since it was made.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct CacheStats {
  /// Texts that began with a cached prefix.
  pub hits: u64,
  /// Texts long enough to look up that found none.
  pub misses: u64,
  /// Ids copied from the cache instead of tokenized.
  pub reused_tokens: u64,
  /// Ids tokenized by texts that were looked up.
  pub encoded_tokens: u64,
  pub evictions: u64,
  /// Bytes held now.
  pub bytes: u64,
  pub pieces: u64,
}

struct Node {
  parent: Option<u32>,
  children: Vec<u32>,
  hash: u128,
  /// This piece's text and ids (the prefix is the parents' pieces, then this one).
  text: Box<[u8]>,
  ids: Box<[u32]>,
  tick: u64,
}

impl Node {
  fn cost(&self) -> usize {
    self.text.len() + self.ids.len() * 4 + NODE_OVERHEAD
  }
}

pub struct PrefixCache {
  budget: usize,
  seed: u64,
  nodes: Vec<Option<Node>>,
  free: Vec<u32>,
  by_hash: FxHashMap<u128, u32>,
  lru: BTreeMap<u64, u32>,
  tick: u64,
  stats: CacheStats,
}

impl PrefixCache {
  /// A cache of at most `budget` bytes. The hash seed is random per cache, so a client cannot
  /// aim for collisions (which would only cost misses anyway).
  pub fn new(budget: usize) -> Self {
    Self {
      budget,
      seed: fastrand::u64(..),
      nodes: Vec::new(),
      free: Vec::new(),
      by_hash: FxHashMap::default(),
      lru: BTreeMap::new(),
      tick: 0,
      stats: CacheStats::default(),
    }
  }

  pub fn stats(&self) -> CacheStats {
    self.stats
  }

  fn node(&self, at: u32) -> &Node {
    self.nodes[at as usize].as_ref().expect("a live node")
  }

  fn node_mut(&mut self, at: u32) -> &mut Node {
    self.nodes[at as usize].as_mut().expect("a live node")
  }

  fn touch(&mut self, at: u32) {
    self.tick += 1;
    let tick = self.tick;
    let node = self.node_mut(at);
    let old = std::mem::replace(&mut node.tick, tick);
    self.lru.remove(&old);
    self.lru.insert(tick, at);
  }

  /// The node whose prefix is `prefix` (hash `hash`), its chain checked byte for byte.
  fn find(&self, hash: u128, prefix: &[u8]) -> Option<u32> {
    let &at = self.by_hash.get(&hash)?;
    let mut end = prefix.len();
    let mut cur = Some(at);
    while let Some(c) = cur {
      let n = self.node(c);
      let start = end.checked_sub(n.text.len())?;
      if prefix[start..end] != *n.text {
        return None;
      }
      end = start;
      cur = n.parent;
    }
    (end == 0).then_some(at)
  }

  /// Appends the ids of `at`'s whole prefix to `out` (root first) and marks the chain used,
  /// the leaf first so that a parent is never older than its children.
  fn take(&mut self, at: u32, out: &mut TokenIds) -> usize {
    let mut chain = Vec::new();
    let mut cur = Some(at);
    while let Some(c) = cur {
      chain.push(c);
      cur = self.node(c).parent;
    }
    let mut count = 0;
    for &c in chain.iter().rev() {
      let ids = &self.node(c).ids;
      count += ids.len();
      out.extend_from(ids);
    }
    for &c in &chain {
      self.touch(c);
    }
    count
  }

  /// Adds a piece after `parent` (None: the text's first piece), or finds it already there.
  /// `parent_hash`: the parent's, which another thread may have evicted since it was found.
  fn insert(&mut self, parent: Option<u32>, parent_hash: u128, hash: u128, text: &[u8], ids: &[u32]) -> Option<u32> {
    if let Some(p) = parent {
      if self.nodes.get(p as usize)?.as_ref()?.hash != parent_hash {
        return None;
      }
    }
    if let Some(&at) = self.by_hash.get(&hash) {
      let n = self.node(at);
      // Only the same piece after the same parent; a colliding hash keeps the older piece.
      if n.parent == parent && *n.text == *text {
        self.touch(at);
        return Some(at);
      }
      return None;
    }
    let node = Node { parent, children: Vec::new(), hash, text: text.into(), ids: ids.into(), tick: 0 };
    let cost = node.cost();
    if cost > self.budget {
      return None;
    }
    let at = match self.free.pop() {
      Some(at) => {
        self.nodes[at as usize] = Some(node);
        at
      }
      None => {
        self.nodes.push(Some(node));
        u32::try_from(self.nodes.len() - 1).ok()?
      }
    };
    if let Some(p) = parent {
      self.node_mut(p).children.push(at);
    }
    self.by_hash.insert(hash, at);
    self.touch(at);
    self.stats.bytes += cost as u64;
    self.stats.pieces += 1;
    // Evict until within budget, never the chain just written (it is the most recent).
    while self.stats.bytes > self.budget as u64 {
      let Some((_, &oldest)) = self.lru.iter().next() else { break };
      if oldest == at {
        break;
      }
      self.remove(oldest);
      self.stats.evictions += 1;
    }
    self.nodes.get(at as usize)?.as_ref().map(|_| at)
  }

  /// Removes a node and every node after it.
  fn remove(&mut self, at: u32) {
    let mut stack = vec![at];
    if let Some(p) = self.node(at).parent {
      self.node_mut(p).children.retain(|&c| c != at);
    }
    while let Some(c) = stack.pop() {
      let n = self.nodes[c as usize].take().expect("a live node");
      stack.extend_from_slice(&n.children);
      self.lru.remove(&n.tick);
      self.by_hash.remove(&n.hash);
      self.stats.bytes -= n.cost() as u64;
      self.stats.pieces -= 1;
      self.free.push(c);
    }
  }
}

/// Scratch of one cached encode: the cuts and the hash of each prefix they end.
#[derive(Default)]
pub struct EncodeScratch {
  cuts: Vec<usize>,
  hashes: Vec<u128>,
}

/// Appends the ids of `text` to `out`, exactly those `tokenizer` gives the whole text, reusing
/// the cached ids of its longest cached prefix. Returns how many ids came from the cache.
pub fn encode_cached(
  tokenizer: &Tokenizer,
  splitter: &Splitter,
  cache: &std::sync::Mutex<PrefixCache>,
  text: &str,
  scratch: &mut EncodeScratch,
  out: &mut TokenIds,
) -> Result<usize, String> {
  splitter.cuts(text, &mut scratch.cuts);
  if text.len() < MIN_CACHED_TEXT || scratch.cuts.is_empty() {
    return tokenizer.encode_into(text, out).map(|()| 0);
  }
  let bytes = text.as_bytes();
  let seed = lock(cache).seed;
  let mut hasher = Xxh3::with_seed(seed);
  scratch.hashes.clear();
  let mut from = 0;
  for &cut in &scratch.cuts {
    hasher.update(&bytes[from..cut]);
    scratch.hashes.push(hasher.digest128());
    from = cut;
  }
  let base = out.len();
  // The longest cached prefix: its ids copied, and the index of the first piece still to encode.
  let (mut parent, first, reused) = {
    let mut c = lock(cache);
    let hit = (0..scratch.cuts.len()).rev().find_map(|i| c.find(scratch.hashes[i], &bytes[..scratch.cuts[i]]).map(|at| (i, at)));
    match hit {
      Some((i, at)) => {
        let reused = c.take(at, out);
        c.stats.hits += 1;
        (Some(at), i + 1, reused)
      }
      None => {
        c.stats.misses += 1;
        (None, 0, 0)
      }
    }
  };
  // The rest piece by piece (each as the whole text would tokenize it), the tail last.
  let mut pieces: Vec<(usize, usize, usize, usize)> = Vec::with_capacity(scratch.cuts.len() - first);
  let mut start = if first == 0 { 0 } else { scratch.cuts[first - 1] };
  for &cut in &scratch.cuts[first..] {
    let ids_from = out.len();
    tokenizer.encode_into(&text[start..cut], out)?;
    pieces.push((start, cut, ids_from, out.len()));
    start = cut;
  }
  tokenizer.encode_into(&text[start..], out)?;
  let mut c = lock(cache);
  c.stats.reused_tokens += reused as u64;
  c.stats.encoded_tokens += (out.len() - base - reused) as u64;
  let ids = out.as_slice();
  for (k, &(s, e, ids_from, ids_to)) in pieces.iter().enumerate() {
    // The parent may have been evicted by another thread meanwhile: then nothing more is kept.
    let parent_hash = if first + k == 0 { 0 } else { scratch.hashes[first + k - 1] };
    match c.insert(parent, parent_hash, scratch.hashes[first + k], &bytes[s..e], &ids[ids_from..ids_to]) {
      Some(at) => parent = Some(at),
      None => break,
    }
  }
  Ok(reused)
}

fn lock(cache: &std::sync::Mutex<PrefixCache>) -> std::sync::MutexGuard<'_, PrefixCache> {
  // A panic under the lock leaves a consistent cache (every change completes before the next).
  cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
