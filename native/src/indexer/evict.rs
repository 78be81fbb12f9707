//! Events mode's optional block cap (Dynamo has none): past `max_blocks` indexed pairs, whole
//! leaves are evicted, least recently used first, down to `prune_fraction` x the cap.
//!
//! Recency is a logical tick: a stored block is stamped when stored, and `find_matches_into`
//! stamps the path it walked. Only leaf blocks (the last of a childless edge) are evicted (a
//! parent outlives its children), so the index keeps holding prefixes. Candidates come from a
//! lazy min-heap: every leaf has an entry whose stamp is at most the leaf's current one; a popped
//! entry that is stale (the block was touched since, is gone, or is no longer a leaf) is
//! re-queued or dropped. Touching a path on the hot path is then just a store per block, no heap
//! work.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::tree::{BlockId, Tree};
use super::workers::Slot;
use super::{ModeState, RadixIndexer};

#[derive(Default, Clone)]
pub(super) struct Lru {
  /// Last use of each block id (indexed by id; 0 for ids never stamped).
  stamps: Vec<u64>,
  heap: BinaryHeap<Reverse<(u64, BlockId)>>,
  tick: u64,
}

impl Lru {
  #[inline]
  pub fn next_tick(&mut self) -> u64 {
    self.tick += 1;
    self.tick
  }

  pub fn tick(&self) -> u64 {
    self.tick
  }

  pub fn set_tick(&mut self, tick: u64) {
    self.tick = tick;
  }

  #[inline]
  pub fn touch(&mut self, node: BlockId, tick: u64) {
    let at = node as usize;
    if at >= self.stamps.len() {
      self.stamps.resize(at + 1, 0);
    }
    self.stamps[at] = tick;
  }

  pub fn stamp(&self, node: BlockId) -> u64 {
    self.stamps.get(node as usize).copied().unwrap_or(0)
  }

  /// A block that is (or became) a leaf.
  pub fn on_leaf(&mut self, node: BlockId) {
    self.heap.push(Reverse((self.stamp(node), node)));
  }

  /// The least recently used leaf, removed from the queue.
  fn pop_leaf(&mut self, tree: &Tree) -> Option<BlockId> {
    while let Some(Reverse((stamp, node))) = self.heap.pop() {
      if !tree.is_live_block(node) || !tree.is_leaf_block(node) {
        continue; // gone, or interior now: it is queued again when it becomes a leaf
      }
      let current = self.stamp(node);
      if current != stamp {
        self.heap.push(Reverse((current, node)));
        continue;
      }
      return Some(node);
    }
    None
  }

  /// Rebuilds the queue from the live leaves once stale entries outnumber them.
  fn maybe_compact(&mut self, tree: &Tree) {
    if self.heap.len() <= 2 * tree.len() + 1024 {
      return;
    }
    let leaves: Vec<_> =
      (0..tree.block_bound() as BlockId).filter(|&n| tree.is_live_block(n) && tree.is_leaf_block(n)).map(|n| Reverse((self.stamp(n), n))).collect();
    self.heap = BinaryHeap::from(leaves);
  }

  pub fn bytes(&self) -> usize {
    self.stamps.capacity() * 8 + self.heap.capacity() * 16
  }

  #[cfg(test)]
  pub fn check(&self, tree: &Tree) {
    let mut queued: rustc_hash::FxHashMap<BlockId, u64> = Default::default();
    for Reverse((s, n)) in self.heap.iter() {
      let e = queued.entry(*n).or_insert(*s);
      *e = (*e).min(*s);
    }
    for n in 0..tree.block_bound() as BlockId {
      if tree.is_live_block(n) && tree.is_leaf_block(n) {
        let s = queued.get(&n).copied();
        assert!(s.is_some_and(|s| s <= self.stamp(n)), "leaf {n} is not queued for eviction");
      }
    }
  }
}

impl RadixIndexer {
  /// After a store: evicts down to the prune target once the events cap is passed.
  pub(super) fn enforce_cap(&mut self) {
    let Some(cap) = self.cfg.max_blocks else { return };
    if self.slots.total_held() > cap {
      let target = self.cfg.prune_target(cap);
      self.evict_to(target);
    }
    if let ModeState::Events(ev) = &mut self.state {
      if let Some(lru) = &mut ev.lru {
        lru.maybe_compact(&self.tree);
      }
    }
  }

  /// Evicts least recently used leaves until at most `target` pairs remain. Returns the pairs
  /// evicted.
  fn evict_to(&mut self, target: u64) -> u64 {
    let mut evicted_blocks: Vec<BlockId> = Vec::new();
    let mut touched_slots: Vec<Slot> = Vec::new();
    let mut holders = std::mem::take(&mut self.scratch.slots);
    let mut evicted = 0;
    while self.slots.total_held() > target {
      let ModeState::Events(ev) = &mut self.state else { break };
      let Some(lru) = &mut ev.lru else { break };
      let Some(block) = lru.pop_leaf(&self.tree) else { break };
      holders.clear();
      self.tree.holders_of_block(block, &mut holders);
      let (edge, pos) = self.tree.locate(block);
      for &slot in holders.iter() {
        self.tree.set_coverage(edge, slot, pos);
        self.slots.count_removed(slot, 1);
        touched_slots.push(slot);
        evicted += 1;
      }
      evicted_blocks.push(block);
      let leaf = self.trim(edge);
      if let ModeState::Events(ev) = &mut self.state {
        ev.on_new_leaf(leaf);
      }
    }
    self.scratch.slots = holders;
    let Self { tree, slots, state, counters, .. } = self;
    let ModeState::Events(ev) = state else { return 0 };
    // The engine keys naming evicted blocks go in one pass per affected slot. Freed ids are not
    // reused before this pass (nothing is inserted meanwhile), so a key cannot name a new block.
    let mut dead = vec![false; tree.block_bound()];
    for &b in &evicted_blocks {
      dead[b as usize] = true;
    }
    touched_slots.sort_unstable();
    touched_slots.dedup();
    for &slot in &touched_slots {
      ev.keys[slot as usize].retain(|b| !dead[b as usize]);
      if slots.held(slot) == 0 {
        slots.release(slot);
      }
    }
    ev.extra_refs.retain(|&(_, b), _| !dead[b as usize]);
    counters.evictions += evicted;
    evicted
  }
}

#[cfg(test)]
mod tests {
  use super::super::{IndexerConfig, IndexerMode, WorkerKey};
  use super::*;

  fn key(worker: u64) -> WorkerKey {
    WorkerKey { worker, dp_rank: 0 }
  }

  fn capped(max_blocks: u64, prune_fraction: f64) -> RadixIndexer {
    let mut cfg = IndexerConfig::new(4, IndexerMode::Events);
    cfg.max_blocks = Some(max_blocks);
    cfg.prune_fraction = prune_fraction;
    RadixIndexer::new(cfg)
  }

  fn blocks(ix: &mut RadixIndexer, local: &[u64]) -> Vec<(WorkerKey, u32)> {
    let mut out = Vec::new();
    ix.find_matches_into(local, false, 0.0, &mut out);
    out.sort();
    out
  }

  #[test]
  fn evicts_least_recently_matched_leaves_first() {
    let mut ix = capped(6, 1.0);
    ix.apply_stored(key(1), None, &[10, 11], &[1, 2], 0.0).unwrap(); // path A
    ix.apply_stored(key(1), None, &[20, 21], &[5, 6], 0.0).unwrap(); // path B
    ix.apply_stored(key(1), None, &[30, 31], &[8, 9], 0.0).unwrap(); // path C
    assert_eq!(blocks(&mut ix, &[1, 2]), vec![(key(1), 2)]); // A is now the most recent
    ix.apply_stored(key(1), None, &[40], &[12], 0.0).unwrap(); // 7 > 6: evict one leaf
    assert_eq!(ix.stats().counters.evictions, 1);
    assert_eq!(blocks(&mut ix, &[5, 6]), vec![(key(1), 1)], "B's leaf was the least recently used");
    assert_eq!(blocks(&mut ix, &[1, 2]), vec![(key(1), 2)]);
    // B's leaf is gone and so is its engine key: removing it is an unknown removal.
    assert_eq!(ix.apply_removed(key(1), &[21], 0.0), 0);
    ix.check();
  }

  #[test]
  fn prunes_to_the_fraction_and_parents_outlive_children() {
    let mut ix = capped(10, 0.5);
    let engine: Vec<u64> = (100..110).collect();
    let local: Vec<u64> = (1..=10).collect();
    ix.apply_stored(key(1), None, &engine, &local, 0.0).unwrap();
    assert_eq!(ix.stats().blocks, 10);
    ix.apply_stored(key(2), None, &[7], &[1], 0.0).unwrap(); // 11 > 10: down to 5
    let s = ix.stats();
    assert_eq!(s.blocks, 5);
    assert_eq!(s.counters.evictions, 6);
    // The deepest blocks went first, so worker 1 keeps a prefix; the new block stays.
    assert_eq!(blocks(&mut ix, &local), vec![(key(1), 4), (key(2), 1)]);
    ix.check();
  }

  #[test]
  fn eviction_drops_every_holder_of_a_leaf_and_frees_empty_slots() {
    let mut ix = capped(3, 1.0);
    ix.apply_stored(key(1), None, &[10], &[1], 0.0).unwrap();
    ix.apply_stored(key(2), None, &[20], &[1], 0.0).unwrap();
    ix.apply_stored(key(3), None, &[30], &[2], 0.0).unwrap();
    assert_eq!(blocks(&mut ix, &[2]), vec![(key(3), 1)]);
    ix.apply_stored(key(3), Some(30), &[31], &[3], 0.0).unwrap(); // 4 > 3
    let s = ix.stats();
    assert_eq!((s.blocks, s.workers, s.counters.evictions), (2, 1, 2));
    assert_eq!(blocks(&mut ix, &[1]), vec![]);
    ix.check();
  }

  #[test]
  fn the_queue_is_compacted() {
    let mut ix = capped(1 << 20, 1.0);
    for _ in 0..3000 {
      ix.apply_stored(key(1), None, &[7], &[1], 0.0).unwrap();
      ix.apply_removed(key(1), &[7], 0.0);
    }
    ix.apply_stored(key(1), None, &[7], &[1], 0.0).unwrap();
    let ModeState::Events(ev) = &ix.state else { unreachable!() };
    // 3001 entries were queued for what is never more than one node at a time.
    let queued = ev.lru.as_ref().unwrap().heap.len();
    assert!(queued <= 2 + 1024 + 1, "{queued} queued");
    assert_eq!(ix.stats().nodes, 1);
    ix.check();
  }

  #[test]
  fn evicting_a_leaf_keeps_the_shorter_prefix_of_another_holder() {
    let mut ix = capped(5, 1.0);
    ix.apply_stored(key(1), None, &[10, 11, 12], &[1, 2, 3], 0.0).unwrap();
    ix.apply_stored(key(2), None, &[20, 21], &[1, 2], 0.0).unwrap();
    assert_eq!(blocks(&mut ix, &[1, 2, 3]), vec![(key(1), 3), (key(2), 2)]);
    ix.apply_stored(key(3), None, &[30], &[9], 0.0).unwrap(); // 6 > 5: evict the LRU leaf
                                                              // [9] is the newest; the walk stamped [1, 2, 3] after both stores: block [1, 2, 3] goes.
    assert_eq!(blocks(&mut ix, &[1, 2, 3]), vec![(key(1), 2), (key(2), 2)]);
    assert_eq!(ix.apply_removed(key(1), &[12], 0.0), 0, "its engine key went with it");
    ix.check();
  }
}
