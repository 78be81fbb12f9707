//! The prefix walk. Two ways to find block i's node, cheapest first:
//! - blocks stored by one event get consecutive node ids (and a freed chain is handed out again
//!   in order), so the node after block i - 1's is tried first: one adjacent read, no table;
//! - otherwise the table, by the block's key: a chained hash of local hashes 0..=i that depends
//!   only on the prompt, not on the node found at i - 1. So while the walk takes the table path
//!   it computes keys AHEAD blocks ahead and prefetches their table lines, overlapping the cache
//!   misses instead of paying them one after another. (While the adjacent path hits, those
//!   prefetches would only cost: they are skipped.)
//!
//! It keeps the set of candidates still matching (an inline u64 mask, plus a list for slots
//! >= 64); a candidate leaving the set at block i held exactly i leading blocks.

use super::keytable::prefetch;
use super::tree::{chain_key, NodeId, ROOT, ROOT_KEY};
use super::workers::{Slot, WorkerKey};
use super::{ModeState, RadixIndexer};

/// Prefetch distance in blocks; a power of two (the keys in flight live in a ring this size).
const AHEAD: usize = 16;

impl RadixIndexer {
  /// For each (worker, dp_rank) holding a prefix of the prompt whose local block hashes are
  /// `local_hashes`, the number of leading blocks it holds (contiguous from block 0). Clears
  /// `out`; lists only pairs with at least one block, in no particular order.
  ///
  /// `early_exit`: stop walking as soon as at most one candidate remains (as Dynamo does). The
  /// counts of candidates that left the walk are exact; the last candidate's count is then a
  /// lower bound (the blocks walked so far, at least every other count), which is enough to
  /// pick the best worker but not to know its exact overlap.
  ///
  /// Approximate mode first drops the entries whose TTL has passed at `now_ms`. With an events
  /// cap, the matched path becomes the most recently used.
  pub fn find_matches_into(&mut self, local_hashes: &[u64], early_exit: bool, now_ms: f64, out: &mut Vec<(WorkerKey, u32)>) {
    out.clear();
    if matches!(self.state, ModeState::Approx(_)) {
      self.expire(now_ms);
    }
    let n = local_hashes.len();
    let tree = &self.tree;
    let mut ring = [0u64; AHEAD];
    let mut computed = 0;
    let mut ahead_key = ROOT_KEY;
    while computed < n.min(AHEAD) {
      ahead_key = chain_key(ahead_key, local_hashes[computed]);
      tree.index.prefetch(ahead_key);
      ring[computed] = ahead_key;
      computed += 1;
    }
    let mut on_table_path = true;
    // Candidates with slot >= 64 (rare: more than 64 (worker, rank) pairs).
    let high = &mut self.scratch.slots;
    high.clear();

    let mut active = 0u64;
    let mut prev: NodeId = ROOT;
    let mut walked = 0u32;
    for i in 0..n {
      let key = ring[i % AHEAD];
      if computed < n {
        ahead_key = chain_key(ahead_key, local_hashes[computed]);
        if on_table_path {
          tree.index.prefetch(ahead_key);
        }
        ring[computed % AHEAD] = ahead_key;
        computed += 1;
      }
      let next = prev as usize + 1;
      let adjacent = match tree.nodes.get(next) {
        Some(n) => i > 0 && n.key == key && n.parent == prev,
        None => false,
      };
      on_table_path = !adjacent;
      if on_table_path {
        // The node of a block half the prefetch distance ahead: its line has arrived by now.
        if let Some(id) = tree.index.peek(ring[(i + AHEAD / 2) % AHEAD]).filter(|_| i + AHEAD / 2 < computed) {
          prefetch(tree.node(id));
        }
      }
      let node = if adjacent {
        next as NodeId
      } else {
        match tree.lookup(key) {
          Some(id) if tree.node(id).parent == prev => id,
          _ => break,
        }
      };
      let held = tree.node(node).workers;
      // The candidate set changed at this block (checked for early exit only then).
      let mut changed = i == 0;
      if i == 0 {
        active = held;
        high.extend_from_slice(tree.spilled(node));
      } else {
        let depth = i as u32;
        let mut left = active & !held;
        if left != 0 {
          changed = true;
          active &= held;
          while left != 0 {
            out.push((self.slots.key(left.trailing_zeros()), depth));
            left &= left - 1;
          }
        }
        if !high.is_empty() {
          let spilled = tree.spilled(node);
          let before = high.len();
          high.retain(|s| {
            let keep = spilled.binary_search(s).is_ok();
            if !keep {
              out.push((self.slots.key(*s), depth));
            }
            keep
          });
          changed |= high.len() != before;
        }
      }
      if active == 0 && high.is_empty() {
        break;
      }
      prev = node;
      walked += 1;
      if early_exit && changed && (active.count_ones() as usize + high.len()) <= 1 {
        break;
      }
    }
    // Whoever is still a candidate holds every block walked.
    while active != 0 {
      out.push((self.slots.key(active.trailing_zeros()), walked));
      active &= active - 1;
    }
    for &s in high.iter() {
      out.push((self.slots.key(s as Slot), walked));
    }
    self.touch_path(prev, walked);
  }

  /// Marks the `walked` blocks ending at `last` as just used, for the events cap.
  fn touch_path(&mut self, mut last: NodeId, walked: u32) {
    if let ModeState::Events(ev) = &mut self.state {
      if let Some(lru) = &mut ev.lru {
        let tick = lru.next_tick();
        for _ in 0..walked {
          lru.touch(last, tick);
          last = self.tree.node(last).parent;
        }
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::super::{IndexerConfig, IndexerMode};
  use super::*;

  fn key(worker: u64, dp_rank: u32) -> WorkerKey {
    WorkerKey { worker, dp_rank }
  }

  fn sorted(mut v: Vec<(WorkerKey, u32)>) -> Vec<(WorkerKey, u32)> {
    v.sort();
    v
  }

  /// Stores `local` for `k` as one event whose engine keys are 1000*worker + rank*100 + i.
  fn store(ix: &mut RadixIndexer, k: WorkerKey, local: &[u64]) {
    let engine: Vec<u64> = (0..local.len() as u64).map(|i| k.worker * 1_000_000 + k.dp_rank as u64 * 10_000 + i).collect();
    ix.apply_stored(k, None, &engine, local, 0.0).unwrap();
  }

  #[test]
  fn counts_leading_blocks_per_pair() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    store(&mut ix, key(1, 0), &[1, 2, 3, 4]);
    store(&mut ix, key(2, 0), &[1, 2]);
    store(&mut ix, key(2, 1), &[1, 2, 3]);
    store(&mut ix, key(3, 0), &[9, 2, 3]);
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3, 4, 5], false, 0.0, &mut out);
    assert_eq!(sorted(out.clone()), vec![(key(1, 0), 4), (key(2, 0), 2), (key(2, 1), 3)]);
    ix.find_matches_into(&[1, 7, 3], false, 0.0, &mut out);
    assert_eq!(sorted(out.clone()), vec![(key(1, 0), 1), (key(2, 0), 1), (key(2, 1), 1)]);
    ix.find_matches_into(&[5], false, 0.0, &mut out);
    assert!(out.is_empty());
    ix.find_matches_into(&[], false, 0.0, &mut out);
    assert!(out.is_empty());
  }

  #[test]
  fn a_gap_ends_a_workers_prefix() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    ix.apply_stored(key(1, 0), None, &[10, 11, 12], &[1, 2, 3], 0.0).unwrap();
    ix.apply_stored(key(2, 0), None, &[20, 21, 22], &[1, 2, 3], 0.0).unwrap();
    ix.apply_removed(key(1, 0), &[11], 0.0);
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3], false, 0.0, &mut out);
    assert_eq!(sorted(out), vec![(key(1, 0), 1), (key(2, 0), 3)]);
  }

  #[test]
  fn early_exit_stops_with_one_candidate_left() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    store(&mut ix, key(1, 0), &[1, 2, 3, 4, 5]);
    store(&mut ix, key(2, 0), &[1, 2]);
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3, 4, 5], true, 0.0, &mut out);
    // Worker 2 leaves at block 2 (exact); worker 1 is then alone: a lower bound of 3.
    assert_eq!(sorted(out.clone()), vec![(key(1, 0), 3), (key(2, 0), 2)]);
    ix.find_matches_into(&[1, 2, 3, 4, 5], false, 0.0, &mut out);
    assert_eq!(sorted(out), vec![(key(1, 0), 5), (key(2, 0), 2)]);
  }

  #[test]
  fn more_than_64_pairs_spill_and_still_match() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    for w in 0..150u64 {
      let depth = 1 + (w % 5) as usize;
      store(&mut ix, key(w, 0), &[1, 2, 3, 4, 5][..depth]);
    }
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6], false, 0.0, &mut out);
    let expect: Vec<_> = (0..150u64).map(|w| (key(w, 0), 1 + (w % 5) as u32)).collect();
    assert_eq!(sorted(out.clone()), expect);
    // 30 candidates reach the last block: early exit never triggers, every count is exact.
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6], true, 0.0, &mut out);
    assert_eq!(sorted(out), expect);
    ix.check();
  }
}
