//! The prefix walk. From the root's child whose first key is the prompt's first block, each edge
//! is compared with the prompt as a run (eight keys at a time), then the walk goes on into the
//! child whose first key is the next block's. Holders change only at edge boundaries and
//! cutoffs, so the candidate set (an inline u64 mask, plus a list for slots >= 64) is updated
//! once per edge, not once per block: a candidate holding no block of an edge leaves at the
//! edge's start, a partial holder at its cutoff, and full holders go on.

use super::tree::{EdgeId, NO_EXTRA, ROOT_BLOCK};
use super::workers::{Slot, WorkerKey, INLINE_SLOTS};
use super::{ModeState, RadixIndexer};
use crate::prefix::common_prefix;

/// Candidates that left the walk: `depth` blocks held by the slots of `mask` (< 64).
#[derive(Clone, Copy, Debug)]
pub(super) struct Left {
  depth: u32,
  mask: u64,
}

/// What one walk found, before it is reported.
#[derive(Default, Clone)]
pub(super) struct WalkScratch {
  left: Vec<Left>,
  /// Slots >= 64 that left, with their depth.
  left_high: Vec<(Slot, u32)>,
  /// Candidates >= 64 still in the walk (sorted).
  high: Vec<Slot>,
  /// (edge, blocks matched) of each edge walked, for the events cap's recency.
  visited: Vec<(EdgeId, u32)>,
  /// The matches as (depth, rank, slot), deepest first, for more than 64 slots.
  sorted: Vec<(u32, u32, Slot)>,
  /// Where each depth's bucket starts in `sorted` (a counting sort's offsets).
  depth_starts: Vec<u32>,
  /// One bit per rank, to order a large bucket without a sort.
  rank_bits: Vec<u64>,
}

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
    self.walk(local_hashes, early_exit, now_ms);
    let w = &self.scratch.walk;
    for g in &w.left {
      let mut m = g.mask;
      while m != 0 {
        out.push((self.slots.key(m.trailing_zeros()), g.depth));
        m &= m - 1;
      }
    }
    out.extend(w.left_high.iter().map(|&(s, d)| (self.slots.key(s), d)));
  }

  /// As `find_matches_into`, best first: blocks descending, then worker, then dp rank.
  pub fn find_matches_sorted_into(&mut self, local_hashes: &[u64], early_exit: bool, now_ms: f64, out: &mut Vec<(WorkerKey, u32)>) {
    let n = self.walk_matches(local_hashes, early_exit, now_ms);
    out.clear();
    out.resize(n, (WorkerKey { worker: 0, dp_rank: 0 }, 0));
    self.emit_sorted(|i, key, blocks| out[i] = (key, blocks));
  }

  /// Walks the prompt (as `find_matches_into`) and returns how many pairs matched; then
  /// `emit_sorted` hands them out best first. Two steps so that a caller can pick where the
  /// result goes from its size (the addon writes straight into JavaScript's buffer when it fits).
  pub fn walk_matches(&mut self, local_hashes: &[u64], early_exit: bool, now_ms: f64) -> usize {
    self.walk(local_hashes, early_exit, now_ms);
    let w = &self.scratch.walk;
    w.left.iter().map(|g| g.mask.count_ones() as usize).sum::<usize>() + w.left_high.len()
  }

  /// The last walk's matches, best first (blocks descending, then worker, then dp rank): `emit`
  /// gets each one's place in that order (0, 1, ...), its pair and its blocks.
  pub fn emit_sorted(&mut self, mut emit: impl FnMut(usize, WorkerKey, u32)) {
    let Self { slots, scratch, .. } = self;
    let w = &mut scratch.walk;
    if w.left.is_empty() && w.left_high.is_empty() {
      return;
    }
    slots.refresh_order();
    let slots = &*slots;
    let mut at = 0;
    if slots.bound() <= INLINE_SLOTS as usize {
      // Every slot number is below 64, and so is every rank: per depth, the leavers' ranks as a
      // bit mask come out in (worker, dp_rank) order without a sort.
      // With slots in rank order (workers listed in order), a slot mask is its rank mask.
      w.left.sort_unstable_by_key(|l| std::cmp::Reverse(l.depth));
      let (ranks, order, in_order) = (slots.ranks(), slots.by_rank(), slots.slots_in_order());
      let mut i = 0;
      while i < w.left.len() {
        let depth = w.left[i].depth;
        let mut by_rank = 0u64;
        while i < w.left.len() && w.left[i].depth == depth {
          let mut m = w.left[i].mask;
          if in_order {
            by_rank |= m;
            m = 0;
          }
          while m != 0 {
            by_rank |= 1u64 << ranks[m.trailing_zeros() as usize];
            m &= m - 1;
          }
          i += 1;
        }
        while by_rank != 0 {
          let r = by_rank.trailing_zeros() as usize;
          emit(at, slots.key(if in_order { r as Slot } else { order[r] }), depth);
          at += 1;
          by_rank &= by_rank - 1;
        }
      }
      return;
    }
    // More than 64 slots: the matches are bucketed by depth (a counting sort, deepest first),
    // each bucket ordered by rank. Leavers are pushed in slot order per edge, so with slots in
    // rank order a bucket is usually in order already and only a bucket that is not is sorted:
    // at fleet scale a query's first block is held by a thousand workers that leave together.
    let ranks = slots.ranks();
    let WalkScratch { left, left_high, sorted, depth_starts, rank_bits, .. } = w;
    let max_depth = left.iter().map(|g| g.depth).chain(left_high.iter().map(|&(_, d)| d)).max().unwrap_or(0) as usize;
    depth_starts.clear();
    depth_starts.resize(max_depth + 2, 0);
    let mut count = |d: u32, n: u32| depth_starts[max_depth - d as usize + 1] += n;
    for g in left.iter() {
      count(g.depth, g.mask.count_ones());
    }
    for &(_, d) in left_high.iter() {
      count(d, 1);
    }
    for i in 1..depth_starts.len() {
      depth_starts[i] += depth_starts[i - 1];
    }
    let total = depth_starts[max_depth + 1] as usize;
    sorted.clear();
    sorted.resize(total, (0, 0, 0));
    let mut place = |d: u32, s: Slot| {
      let at = &mut depth_starts[max_depth - d as usize];
      sorted[*at as usize] = (d, ranks[s as usize], s);
      *at += 1;
    };
    for g in left.iter() {
      let mut m = g.mask;
      while m != 0 {
        place(g.depth, m.trailing_zeros());
        m &= m - 1;
      }
    }
    for &(s, d) in left_high.iter() {
      place(d, s);
    }
    // Each bucket, now contiguous, by rank. A large one (workers interned out of key order, a
    // thousand of them leaving at one depth) is ordered through a bit per rank, read in order:
    // linear in the ranks' words and the bucket, where a sort is n log n.
    let order = slots.by_rank();
    let mut start = 0;
    while start < total {
      let depth = sorted[start].0;
      let mut end = start + 1;
      while end < total && sorted[end].0 == depth {
        end += 1;
      }
      let bucket = &mut sorted[start..end];
      let in_order = bucket.is_sorted_by_key(|e| e.1);
      if !in_order && bucket.len() * 64 >= order.len() {
        rank_bits.clear();
        rank_bits.resize(order.len().div_ceil(64), 0);
        for e in bucket.iter() {
          rank_bits[e.1 as usize / 64] |= 1u64 << (e.1 % 64);
        }
        let mut i = 0;
        for (wi, &word) in rank_bits.iter().enumerate() {
          let mut m = word;
          while m != 0 {
            let r = (wi * 64) as u32 + m.trailing_zeros();
            bucket[i] = (depth, r, order[r as usize]);
            i += 1;
            m &= m - 1;
          }
        }
      } else if !in_order {
        bucket.sort_unstable_by_key(|e| e.1);
      }
      start = end;
    }
    for &(d, _, s) in sorted.iter() {
      emit(at, slots.key(s), d);
      at += 1;
    }
  }

  /// The walk: fills `scratch.walk.left` / `left_high` with every candidate and its depth.
  fn walk(&mut self, local_hashes: &[u64], early_exit: bool, now_ms: f64) {
    if matches!(self.state, ModeState::Approx(_)) {
      self.expire(now_ms);
    }
    let Self { tree, scratch, keying, state, .. } = self;
    let keys = Self::tree_keys(tree, *keying, ROOT_BLOCK, local_hashes, &mut scratch.keys);
    let w = &mut scratch.walk;
    w.left.clear();
    w.left_high.clear();
    w.high.clear();
    w.visited.clear();
    let n = keys.len();
    let Some(mut e) = keys.first().and_then(|&k| tree.child(ROOT_BLOCK, k)) else { return };
    let capped = matches!(state, ModeState::Events(ev) if ev.lru.is_some());
    let mut active = 0u64;
    let mut base = 0u32;
    let mut first = true;
    loop {
      let edge = tree.edge(e);
      let len = edge.len();
      let (high_full, partial): (&[Slot], &[(Slot, u32)]) = if edge.extra == NO_EXTRA {
        (&[], &[])
      } else {
        let x = &tree.extras[edge.extra as usize];
        (&x.high, &x.partial)
      };
      if first {
        first = false;
        active = edge.full;
        w.high.extend_from_slice(high_full);
        let mut merged = false;
        for &(s, _) in partial {
          if s < INLINE_SLOTS {
            active |= 1u64 << s;
          } else {
            w.high.push(s);
            merged = true;
          }
        }
        // Both lists are sorted: only a mix of the two needs a sort (at fleet scale the root
        // edge's holders are the thousand workers of a system prompt, every one full).
        if merged {
          w.high.sort_unstable();
        }
      }
      // Candidates holding no block of this edge leave at its start.
      let mut partial_mask = 0u64;
      for &(s, _) in partial {
        if s < INLINE_SLOTS {
          partial_mask |= 1u64 << s;
        }
      }
      let gone = active & !(edge.full | partial_mask);
      if gone != 0 {
        w.left.push(Left { depth: base, mask: gone });
        active &= !gone;
      }
      let high_before = w.high.len();
      if high_before > 0 {
        // The candidates, the edge's full holders and its partial ones are all sorted by slot:
        // one merge keeps the holders and lets the others leave (a thousand candidates meeting an
        // edge of a few holders cost one pass, not a search each).
        let (mut f, mut p, mut kept) = (0, 0, 0);
        for i in 0..high_before {
          let s = w.high[i];
          while f < high_full.len() && high_full[f] < s {
            f += 1;
          }
          while p < partial.len() && partial[p].0 < s {
            p += 1;
          }
          if (f < high_full.len() && high_full[f] == s) || (p < partial.len() && partial[p].0 == s) {
            w.high[kept] = s;
            kept += 1;
          } else {
            w.left_high.push((s, base));
          }
        }
        w.high.truncate(kept);
      }
      if early_exit && (gone != 0 || w.high.len() < high_before) && active.count_ones() as usize + w.high.len() <= 1 {
        // One candidate left: it holds at least the blocks walked, which is all we need.
        break;
      }
      let m = common_prefix(&edge.keys, &keys[base as usize..]) as u32;
      let ends_here = m < len || (base + m) as usize == n;
      // Partial holders leave at their cutoff (or where the match ends, if sooner).
      for &(s, c) in partial {
        let depth = base + c.min(m);
        if s < INLINE_SLOTS {
          if active & (1u64 << s) != 0 {
            w.left.push(Left { depth, mask: 1u64 << s });
          }
        } else if let Ok(i) = w.high.binary_search(&s) {
          w.high.remove(i);
          w.left_high.push((s, depth));
        }
      }
      active &= edge.full;
      if capped {
        w.visited.push((e, m));
      }
      base += m;
      if ends_here || (active == 0 && w.high.is_empty()) {
        break;
      }
      match tree.child(edge.tail(), keys[base as usize]) {
        Some(c) => e = c,
        None => break,
      }
    }
    // Whoever is still a candidate holds every block walked.
    if active != 0 {
      w.left.push(Left { depth: base, mask: active });
    }
    w.left_high.extend(w.high.iter().map(|&s| (s, base)));
    if capped {
      if let ModeState::Events(ev) = state {
        let lru = ev.lru.as_mut().expect("capped");
        let tick = lru.next_tick();
        for &(e, m) in &w.visited {
          for &b in &tree.edge(e).blocks[..m as usize] {
            lru.touch(b, tick);
          }
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

  /// Stores `local` for `k` as one event whose engine keys are derived from (worker, rank, i).
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
    ix.find_matches_sorted_into(&[1, 2, 3, 4, 5], false, 0.0, &mut out);
    assert_eq!(out, vec![(key(1, 0), 4), (key(2, 1), 3), (key(2, 0), 2)], "best first");
    ix.find_matches_into(&[1, 7, 3], false, 0.0, &mut out);
    assert_eq!(sorted(out.clone()), vec![(key(1, 0), 1), (key(2, 0), 1), (key(2, 1), 1)]);
    ix.find_matches_into(&[5], false, 0.0, &mut out);
    assert!(out.is_empty());
    ix.find_matches_into(&[], false, 0.0, &mut out);
    assert!(out.is_empty());
    ix.check();
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
    assert_eq!(ix.blocks_of(key(1, 0)), 2, "the block after the gap is still held");
    ix.check();
  }

  #[test]
  fn early_exit_stops_with_one_candidate_left() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    store(&mut ix, key(1, 0), &[1, 2, 3, 4, 5, 6, 7]);
    store(&mut ix, key(2, 0), &[1, 2, 9]);
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6, 7], true, 0.0, &mut out);
    // Worker 2 leaves at block 2 (exact); worker 1 is then alone: the blocks walked, 2.
    assert_eq!(sorted(out.clone()), vec![(key(1, 0), 2), (key(2, 0), 2)]);
    // Alone from the start, a candidate is walked to its end.
    store(&mut ix, key(3, 0), &[20, 21, 22]);
    ix.find_matches_into(&[20, 21, 22, 23], true, 0.0, &mut out);
    assert_eq!(out, vec![(key(3, 0), 3)]);
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6, 7], false, 0.0, &mut out);
    assert_eq!(sorted(out), vec![(key(1, 0), 7), (key(2, 0), 2)]);
  }

  #[test]
  fn best_first_whether_or_not_slots_were_taken_in_order() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    // Interned in key order: each slot is its own rank.
    for w in 0..6u64 {
      store(&mut ix, key(w, 0), &[1, 2, 3][..1 + (w % 3) as usize]);
    }
    let mut expect: Vec<_> = (0..6u64).map(|w| (key(w, 0), 1 + (w % 3) as u32)).collect();
    expect.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    ix.find_matches_sorted_into(&[1, 2, 3], false, 0.0, &mut out);
    assert_eq!(out, expect);
    // Then out of order: lower keys in higher slots, and a freed slot reused by a higher key.
    ix.remove_worker(1);
    for w in [40u64, 30, 20, 10] {
      store(&mut ix, key(w, 1), &[1, 2]);
    }
    expect.retain(|e| e.0.worker != 1);
    expect.extend([40u64, 30, 20, 10].map(|w| (key(w, 1), 2)));
    expect.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    ix.find_matches_sorted_into(&[1, 2, 3], false, 0.0, &mut out);
    assert_eq!(out, expect);
    ix.check();
  }

  #[test]
  fn more_than_64_pairs_spill_and_still_match_in_order() {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    for w in (0..150u64).rev() {
      let depth = 1 + (w % 5) as usize;
      store(&mut ix, key(w, 0), &[1, 2, 3, 4, 5][..depth]);
    }
    let mut out = Vec::new();
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6], false, 0.0, &mut out);
    let expect: Vec<_> = (0..150u64).map(|w| (key(w, 0), 1 + (w % 5) as u32)).collect();
    assert_eq!(sorted(out.clone()), expect);
    // 30 candidates reach the last block: early exit never triggers, every count is exact.
    ix.find_matches_into(&[1, 2, 3, 4, 5, 6], true, 0.0, &mut out);
    assert_eq!(sorted(out.clone()), expect);
    ix.find_matches_sorted_into(&[1, 2, 3, 4, 5, 6], false, 0.0, &mut out);
    let mut best_first = expect.clone();
    best_first.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(out, best_first);
    ix.check();
  }

  #[test]
  fn a_fleet_of_workers_out_of_key_order_comes_out_best_first() {
    // 300 workers interned in reverse key order: the 297 that hold only the first block leave
    // together (ordered through the rank bits), the 3 that go on form a bucket small enough to
    // be sorted, at fleet scale's shape (a thousand workers sharing a system prompt's block).
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    let deep = [7u64, 150, 299];
    for w in (0..300u64).rev() {
      store(&mut ix, key(w, 0), if deep.contains(&w) { &[1, 2, 3] } else { &[1] });
    }
    let mut expect: Vec<_> = (0..300u64).map(|w| (key(w, 0), if deep.contains(&w) { 3 } else { 1 })).collect();
    expect.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    ix.find_matches_sorted_into(&[1, 2, 3, 4], false, 0.0, &mut out);
    assert_eq!(out, expect);
    ix.check();
  }
}
