//! Approximate mode, for engines without KV events (Dynamo's `use_kv_events: false`): each
//! routing decision is recorded as if the chosen worker now held the prompt's blocks, for
//! `ttl_ms` after the last time it was routed there. A size cap (`approx_max_blocks` pairs)
//! prunes the oldest pairs down to `prune_fraction` x the cap.
//!
//! Each (slot, node) pair keeps its last routing time. Expiry uses a lazy min-heap of due
//! records: a pair has one record per insertion, a refresh only updates the pair's time, and a
//! popped record whose pair was refreshed since is re-queued at the newer time; one whose pair
//! is gone is dropped. A record never expires a pair early: it removes a pair only when the
//! pair's current time equals the record's.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use hashbrown::HashTable;

use super::tree::{table_bytes, table_hash, BlockId, Tree, ROOT_BLOCK};
use super::workers::{Slot, WorkerKey};
use super::{ModeState, RadixIndexer};

/// A held node and its last routing time (f64 bits split so the entry packs in 12 bytes).
#[derive(Clone, Copy)]
struct TimeEntry {
  node: BlockId,
  lo: u32,
  hi: u32,
}

impl TimeEntry {
  fn new(node: BlockId, time: f64) -> Self {
    let bits = time.to_bits();
    Self { node, lo: bits as u32, hi: (bits >> 32) as u32 }
  }

  fn time(&self) -> f64 {
    f64::from_bits((self.hi as u64) << 32 | self.lo as u64)
  }
}

#[inline]
fn node_hash(node: BlockId) -> u64 {
  table_hash(node as u64)
}

/// One slot's held nodes and their times.
#[derive(Default, Clone)]
pub(super) struct PairTimes {
  table: HashTable<TimeEntry>,
}

impl PairTimes {
  pub fn get(&self, node: BlockId) -> Option<f64> {
    self.table.find(node_hash(node), |e| e.node == node).map(TimeEntry::time)
  }

  /// Sets the time of `node`, never moving it back.
  pub fn set(&mut self, node: BlockId, time: f64) {
    match self.table.find_mut(node_hash(node), |e| e.node == node) {
      Some(e) => {
        if time > e.time() {
          *e = TimeEntry::new(node, time);
        }
      }
      None => {
        self.table.insert_unique(node_hash(node), TimeEntry::new(node, time), |e| node_hash(e.node));
      }
    }
  }

  fn remove(&mut self, node: BlockId) {
    if let Ok(e) = self.table.find_entry(node_hash(node), |e| e.node == node) {
      e.remove();
    }
  }

  pub fn iter(&self) -> impl Iterator<Item = (BlockId, f64)> + '_ {
    self.table.iter().map(|e| (e.node, e.time()))
  }

  pub fn len(&self) -> usize {
    self.table.len()
  }
}

/// A pair due for a look at `time` + TTL. Among pairs routed at the same time the deepest go
/// first, so that pruning leaves prefixes (which can still match) rather than orphaned suffixes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Due {
  pub time: f64,
  /// Position of the block in its path (1 = a child of the root).
  pub depth: u32,
  pub slot: Slot,
  pub node: BlockId,
}

impl Ord for Due {
  fn cmp(&self, other: &Self) -> Ordering {
    (self.time.total_cmp(&other.time)).then(other.depth.cmp(&self.depth)).then(self.slot.cmp(&other.slot)).then(self.node.cmp(&other.node))
  }
}
impl PartialOrd for Due {
  fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
    Some(self.cmp(other))
  }
}
impl PartialEq for Due {
  fn eq(&self, other: &Self) -> bool {
    self.cmp(other) == Ordering::Equal
  }
}
impl Eq for Due {}

#[derive(Default, Clone)]
pub(super) struct ApproxState {
  /// Held nodes and times by slot.
  pub times: Vec<PairTimes>,
  pub due: BinaryHeap<Reverse<Due>>,
}

impl ApproxState {
  pub fn slot_times(&mut self, slot: Slot) -> &mut PairTimes {
    let at = slot as usize;
    if self.times.len() <= at {
      self.times.resize_with(at + 1, PairTimes::default);
    }
    &mut self.times[at]
  }

  /// Takes every pair of `slot`: the nodes it held. Its due records go stale.
  pub fn take_slot(&mut self, slot: Slot) -> Vec<BlockId> {
    match self.times.get_mut(slot as usize) {
      Some(t) => std::mem::take(t).iter().map(|(n, _)| n).collect(),
      None => Vec::new(),
    }
  }

  /// Rebuilds the due queue from the pairs once stale records outnumber them.
  fn maybe_compact(&mut self, pairs: u64, tree: &Tree) {
    if self.due.len() as u64 <= 2 * pairs + 1024 {
      return;
    }
    let records: Vec<_> = (self.times.iter().enumerate())
      .flat_map(|(slot, t)| t.iter().map(move |(node, time)| Reverse(Due { time, depth: tree.depth_of(node) + 1, slot: slot as Slot, node })))
      .collect();
    self.due = BinaryHeap::from(records);
  }

  pub fn bytes(&self) -> usize {
    self.times.iter().map(|t| table_bytes(t.table.capacity(), std::mem::size_of::<TimeEntry>())).sum::<usize>()
      + self.times.capacity() * std::mem::size_of::<PairTimes>()
      + self.due.capacity() * std::mem::size_of::<Due>()
  }

  #[cfg(test)]
  pub fn check(&self, tree: &super::tree::Tree, slots: &super::workers::Slots) {
    let mut pairs = 0u64;
    let mut queued: rustc_hash::FxHashMap<(Slot, BlockId), f64> = Default::default();
    for Reverse(d) in self.due.iter() {
      let e = queued.entry((d.slot, d.node)).or_insert(d.time);
      *e = e.min(d.time);
    }
    for (slot, t) in self.times.iter().enumerate() {
      for (node, time) in t.iter() {
        assert!(tree.is_live_block(node) && tree.holds(node, slot as Slot), "time kept for a pair not held");
        assert!(queued.get(&(slot as Slot, node)).is_some_and(|&q| q <= time), "pair not queued for expiry");
        pairs += 1;
      }
    }
    assert_eq!(pairs, slots.total_held());
  }
}

impl RadixIndexer {
  /// Approximate mode: `key` was just routed the prompt whose local block hashes are
  /// `local_hashes`; it is now assumed to hold them until `now_ms` + TTL. Ignored in events mode.
  pub fn record_routing(&mut self, key: WorkerKey, local_hashes: &[u64], now_ms: f64) {
    if !matches!(self.state, ModeState::Approx(_)) {
      return;
    }
    self.expire(now_ms);
    if local_hashes.is_empty() {
      return;
    }
    let slot = self.slots.intern(key);
    let mut chained = std::mem::take(&mut self.scratch.keys);
    let keys = Self::tree_keys(&self.tree, self.keying, ROOT_BLOCK, local_hashes, &mut chained);
    // Past the id space, only the part of the path that exists is recorded.
    let mut found = std::mem::take(&mut self.scratch.blocks);
    found.clear();
    let mut len = keys.len();
    if !self.tree.has_room(len) {
      super::paths::follow(&self.tree, super::paths::after(&self.tree, ROOT_BLOCK), keys, &mut found);
      len = found.len();
    }
    let mut path = std::mem::take(&mut self.scratch.path);
    path.clear();
    self.hold_path(slot, ROOT_BLOCK, &keys[..len], &mut path);
    self.scratch.keys = chained;
    self.scratch.blocks = found;
    let Self { slots, state, counters, scratch, .. } = self;
    let ModeState::Approx(ap) = state else { return };
    for (i, &(node, newly_held)) in path.iter().enumerate() {
      if newly_held {
        ap.due.push(Reverse(Due { time: now_ms, depth: i as u32 + 1, slot, node }));
      }
      ap.slot_times(slot).set(node, now_ms);
    }
    scratch.path = path;
    if slots.held(slot) == 0 {
      slots.release(slot);
    }
    counters.routings_recorded += 1;
    let cap = self.cfg.approx_max_blocks;
    if self.slots.total_held() > cap {
      let target = self.cfg.prune_target(cap);
      let pruned = self.drop_oldest(|_, held| held <= target);
      self.counters.evictions += pruned;
    }
    if let ModeState::Approx(ap) = &mut self.state {
      ap.maybe_compact(self.slots.total_held(), &self.tree);
    }
  }

  /// Approximate mode: drops the pairs last routed at or before `now_ms` - TTL. Returns how many.
  pub fn expire(&mut self, now_ms: f64) -> usize {
    let ttl = self.cfg.ttl_ms;
    // Stops at the first pair still fresh (and at once for a NaN time).
    let n = self.drop_oldest(|time, _| time + ttl > now_ms || now_ms.is_nan());
    self.counters.expired += n;
    n as usize
  }

  /// Removes the oldest pairs until `stop(oldest time, pairs held)` says so.
  fn drop_oldest(&mut self, stop: impl Fn(f64, u64) -> bool) -> u64 {
    let mut removed = 0;
    loop {
      let ModeState::Approx(ap) = &mut self.state else { return 0 };
      let Some(&Reverse(due)) = ap.due.peek() else { break };
      if stop(due.time, self.slots.total_held()) {
        break;
      }
      ap.due.pop();
      let Some(times) = ap.times.get_mut(due.slot as usize) else { continue };
      match times.get(due.node) {
        None => continue, // the pair is gone: a stale record
        Some(t) if t.to_bits() != due.time.to_bits() => {
          ap.due.push(Reverse(Due { time: t, ..due }));
          continue;
        }
        Some(_) => {}
      }
      times.remove(due.node);
      self.release_block(due.slot, due.node);
      if self.slots.held(due.slot) == 0 {
        self.slots.release(due.slot);
      }
      removed += 1;
    }
    removed
  }
}

#[cfg(test)]
mod tests {
  use super::super::{IndexerConfig, IndexerMode};
  use super::*;

  fn key(worker: u64) -> WorkerKey {
    WorkerKey { worker, dp_rank: 0 }
  }

  fn approx(ttl_ms: f64, cap: u64, prune_fraction: f64) -> RadixIndexer {
    let mut cfg = IndexerConfig::new(4, IndexerMode::Approximate);
    cfg.ttl_ms = ttl_ms;
    cfg.approx_max_blocks = cap;
    cfg.prune_fraction = prune_fraction;
    RadixIndexer::new(cfg)
  }

  fn blocks(ix: &mut RadixIndexer, local: &[u64], now: f64) -> Vec<(WorkerKey, u32)> {
    let mut out = Vec::new();
    ix.find_matches_into(local, false, now, &mut out);
    out.sort();
    out
  }

  #[test]
  fn routed_prompts_match_until_their_ttl_passes() {
    let mut ix = approx(1000.0, 1 << 20, 0.8);
    ix.record_routing(key(1), &[1, 2, 3], 0.0);
    ix.record_routing(key(2), &[1, 2], 500.0);
    assert_eq!(blocks(&mut ix, &[1, 2, 3], 999.0), vec![(key(1), 3), (key(2), 2)]);
    assert_eq!(blocks(&mut ix, &[1, 2, 3], 1000.0), vec![(key(2), 2)], "expired exactly at t + ttl");
    assert_eq!(ix.stats().counters.expired, 3);
    assert_eq!(ix.expire(1500.0), 2);
    assert_eq!(ix.stats().nodes, 0);
    assert_eq!(ix.stats().workers, 0);
    ix.check();
  }

  #[test]
  fn routing_again_refreshes_the_prefix_only() {
    let mut ix = approx(1000.0, 1 << 20, 0.8);
    ix.record_routing(key(1), &[1, 2, 3], 0.0);
    ix.record_routing(key(1), &[1, 2], 800.0);
    assert_eq!(ix.expire(1000.0), 1);
    assert_eq!(blocks(&mut ix, &[1, 2, 3], 1000.0), vec![(key(1), 2)]);
    ix.check();
    assert_eq!(ix.expire(1800.0), 2);
    ix.check();
  }

  #[test]
  fn the_cap_prunes_the_oldest_pairs() {
    let mut ix = approx(1e9, 10, 0.5);
    ix.record_routing(key(1), &[1, 2, 3, 4], 0.0);
    ix.record_routing(key(2), &[9, 8, 7], 1.0);
    ix.record_routing(key(3), &[1, 2], 2.0);
    ix.record_routing(key(4), &[5, 6], 3.0); // 11 > 10: down to 5
    let s = ix.stats();
    assert_eq!((s.blocks, s.counters.evictions), (5, 6));
    // Left: worker 3's (t=2) and worker 4's (t=3) pairs, and worker 2's first block (t=1, its
    // deeper blocks went first).
    assert_eq!(blocks(&mut ix, &[1, 2, 3, 4], 3.0), vec![(key(3), 2)]);
    assert_eq!(blocks(&mut ix, &[5, 6], 3.0), vec![(key(4), 2)]);
    assert_eq!(blocks(&mut ix, &[9, 8, 7], 3.0), vec![(key(2), 1)]);
    ix.check();
  }

  #[test]
  fn events_mode_ignores_routing_records_and_expiry() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
    ix.record_routing(key(1), &[1], 0.0);
    assert_eq!(ix.expire(1e12), 0);
    assert_eq!(ix.stats().blocks, 0);
  }

  #[test]
  fn stale_records_are_compacted() {
    let mut ix = approx(1e9, 1 << 20, 0.8);
    ix.record_routing(key(9), &[1, 2, 3], 0.0);
    for i in 0..5000u64 {
      // Each removal leaves its pair's due record behind.
      ix.record_routing(key(1), &[i + 10], i as f64);
      ix.remove_worker(1);
    }
    let ModeState::Approx(ap) = &ix.state else { unreachable!() };
    assert!(ap.due.len() <= 2 * 4 + 1024, "{} records for 3 pairs", ap.due.len());
    ix.check();
    assert_eq!(blocks(&mut ix, &[1, 2, 3], 1.0), vec![(key(9), 3)]);
  }
}
