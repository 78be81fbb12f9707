//! Who holds which blocks of an edge. Invariant: every slot holds a prefix of every edge, its
//! *coverage* (blocks [0, c) for some c in 0..=len): a slot holding all of it is a *full* holder
//! (an inline u64 mask for slots < 64, a sorted list for the others), one holding a proper prefix
//! a *partial* holder (slot, cutoff). Operations that would leave a hole inside an edge split the
//! edge first (indexer/paths.rs), so this is always true and a walk only meets holders at edge
//! starts and cutoffs.

use super::tree::{BlockId, EdgeId, Extra, Tree, NO_EXTRA};
use super::workers::{Slot, INLINE_SLOTS};

/// Adds `slot` to a sorted list it is not in.
fn insert_sorted(list: &mut Vec<Slot>, slot: Slot) {
  let i = list.binary_search(&slot).unwrap_err();
  list.insert(i, slot);
}

impl Tree {
  fn extra(&self, e: EdgeId) -> Option<&Extra> {
    let x = self.edge(e).extra;
    (x != NO_EXTRA).then(|| &self.extras[x as usize])
  }

  fn extra_mut(&mut self, e: EdgeId) -> &mut Extra {
    if self.edge(e).extra == NO_EXTRA {
      let x = self.alloc_extra();
      self.edge_mut(e).extra = x;
    }
    let x = self.edge(e).extra;
    &mut self.extras[x as usize]
  }

  /// Drops the edge's extra record once it holds nothing.
  fn tidy_extra(&mut self, e: EdgeId) {
    let x = self.edge(e).extra;
    if x != NO_EXTRA && self.extras[x as usize].is_empty() {
      self.release_extra(x);
      self.edge_mut(e).extra = NO_EXTRA;
    }
  }

  /// Full holders with slot >= 64 (empty when none).
  #[inline]
  pub fn high_full(&self, e: EdgeId) -> &[Slot] {
    self.extra(e).map_or(&[], |x| &x.high)
  }

  /// Partial holders (slot, cutoff), sorted by slot (empty when none).
  #[inline]
  pub fn partial(&self, e: EdgeId) -> &[(Slot, u32)] {
    self.extra(e).map_or(&[], |x| &x.partial)
  }

  /// Blocks of `e` that `slot` holds: a prefix [0, coverage).
  pub fn coverage(&self, e: EdgeId, slot: Slot) -> u32 {
    let edge = self.edge(e);
    if slot < INLINE_SLOTS && edge.full & (1u64 << slot) != 0 {
      return edge.len();
    }
    let Some(x) = self.extra(e) else { return 0 };
    if slot >= INLINE_SLOTS && x.high.binary_search(&slot).is_ok() {
      return edge.len();
    }
    x.partial.binary_search_by_key(&slot, |p| p.0).map_or(0, |i| x.partial[i].1)
  }

  /// Sets the coverage of `slot` in `e` to `c` (0 = holds nothing, at most the edge's length);
  /// returns the previous one.
  pub fn set_coverage(&mut self, e: EdgeId, slot: Slot, c: u32) -> u32 {
    let len = self.edge(e).len();
    debug_assert!(c <= len);
    let before = self.coverage(e, slot);
    if before == c {
      return before;
    }
    // Out of where it was.
    if before == len {
      if slot < INLINE_SLOTS {
        self.edge_mut(e).full &= !(1u64 << slot);
      } else {
        let x = self.extra_mut(e);
        let i = x.high.binary_search(&slot).expect("a full high holder is listed");
        x.high.remove(i);
      }
    } else if before > 0 {
      let x = self.extra_mut(e);
      let i = x.partial.binary_search_by_key(&slot, |p| p.0).expect("a partial holder is listed");
      x.partial.remove(i);
    }
    // Into where it goes.
    if c == len {
      if slot < INLINE_SLOTS {
        self.edge_mut(e).full |= 1u64 << slot;
      } else {
        insert_sorted(&mut self.extra_mut(e).high, slot);
      }
    } else if c > 0 {
      let x = self.extra_mut(e);
      let i = x.partial.binary_search_by_key(&slot, |p| p.0).unwrap_err();
      x.partial.insert(i, (slot, c));
    }
    self.tidy_extra(e);
    before
  }

  /// Whether any slot holds any block of `e`.
  #[cfg(test)]
  pub fn has_holders(&self, e: EdgeId) -> bool {
    self.edge(e).full != 0 || self.edge(e).extra != NO_EXTRA
  }

  /// The longest coverage of `e` (its blocks from there on are held by nobody).
  pub fn max_coverage(&self, e: EdgeId) -> u32 {
    if self.edge(e).full != 0 || !self.high_full(e).is_empty() {
      return self.edge(e).len();
    }
    self.partial(e).iter().map(|p| p.1).max().unwrap_or(0)
  }

  /// Every holder of `e` and its coverage (full holders first).
  pub fn holders_into(&self, e: EdgeId, out: &mut Vec<(Slot, u32)>) {
    let len = self.edge(e).len();
    let mut mask = self.edge(e).full;
    while mask != 0 {
      out.push((mask.trailing_zeros(), len));
      mask &= mask - 1;
    }
    out.extend(self.high_full(e).iter().map(|&s| (s, len)));
    out.extend_from_slice(self.partial(e));
  }

  /// The slots holding block `b`.
  pub fn holders_of_block(&self, b: BlockId, out: &mut Vec<Slot>) {
    let (e, p) = self.locate(b);
    let mut mask = self.edge(e).full;
    while mask != 0 {
      out.push(mask.trailing_zeros());
      mask &= mask - 1;
    }
    out.extend_from_slice(self.high_full(e));
    out.extend(self.partial(e).iter().filter(|&&(_, c)| c > p).map(|&(s, _)| s));
  }

  pub fn holds(&self, b: BlockId, slot: Slot) -> bool {
    let (e, p) = self.locate(b);
    self.coverage(e, slot) > p
  }

  /// Splits `e` before position `at` (0 < at < len), holders included: a full holder holds both
  /// parts; a partial one holds the head up to its cutoff and the tail's rest. Returns the tail.
  pub fn split(&mut self, e: EdgeId, at: u32) -> EdgeId {
    let full = self.edge(e).full;
    let high = self.high_full(e).to_vec();
    let partial = match self.edge(e).extra {
      NO_EXTRA => Vec::new(),
      x => std::mem::take(&mut self.extras[x as usize].partial),
    };
    let tail = self.split_raw(e, at);
    self.edge_mut(tail).full = full;
    if !high.is_empty() {
      self.extra_mut(tail).high = high;
    }
    for (slot, c) in partial {
      if c < at {
        self.extra_mut(e).partial.push((slot, c));
        continue;
      }
      // All of the head, and the tail's first c - at blocks.
      if slot < INLINE_SLOTS {
        self.edge_mut(e).full |= 1u64 << slot;
      } else {
        insert_sorted(&mut self.extra_mut(e).high, slot);
      }
      if c > at {
        self.extra_mut(tail).partial.push((slot, c - at));
      }
    }
    self.tidy_extra(e);
    self.tidy_extra(tail);
    tail
  }

  /// Drops the blocks of childless `e` from `keep` = its longest coverage on (held by nobody):
  /// the holders that reached `keep` now hold the whole, shorter edge.
  pub fn truncate_unheld(&mut self, e: EdgeId, keep: u32) {
    debug_assert!(keep > 0 && keep == self.max_coverage(e));
    self.truncate(e, keep);
    let x = self.edge(e).extra;
    if x == NO_EXTRA {
      return;
    }
    let mut promoted = 0u64;
    let mut promoted_high: Vec<Slot> = Vec::new();
    let extra = &mut self.extras[x as usize];
    extra.partial.retain(|&(slot, c)| {
      if c < keep {
        return true;
      }
      if slot < INLINE_SLOTS {
        promoted |= 1u64 << slot;
      } else {
        promoted_high.push(slot);
      }
      false
    });
    for slot in promoted_high {
      insert_sorted(&mut extra.high, slot);
    }
    self.edge_mut(e).full |= promoted;
    self.tidy_extra(e);
  }

  /// Appends `keys` to childless `e` (a leaf extension) for `storing`, a full holder of `e`,
  /// which holds the whole longer edge. The other full holders keep only the blocks they had
  /// (they become partial).
  pub fn extend_leaf(&mut self, e: EdgeId, keys: &[u64], storing: Slot, ids: &mut Vec<BlockId>) {
    debug_assert_eq!(self.coverage(e, storing), self.edge(e).len());
    let edge = self.edge(e);
    let alone = storing < INLINE_SLOTS && edge.full == 1u64 << storing && self.high_full(e).is_empty();
    if alone {
      // The usual extension (a sequence growing on one worker): no other full holder to demote.
      self.extend(e, keys, ids);
      return;
    }
    let len = edge.len();
    let mut full = Vec::new();
    self.holders_into(e, &mut full);
    self.extend(e, keys, ids);
    for (slot, c) in full {
      if c == len && slot != storing {
        // Now a prefix: `len` is below the new length.
        let x = self.extra_mut(e);
        if slot < INLINE_SLOTS {
          x.partial.push((slot, len));
        } else {
          let i = x.high.binary_search(&slot).expect("listed");
          x.high.remove(i);
          x.partial.push((slot, len));
        }
      }
    }
    self.edge_mut(e).full &= if storing < INLINE_SLOTS { 1u64 << storing } else { 0 };
    if self.edge(e).extra != NO_EXTRA {
      let x = self.edge(e).extra as usize;
      self.extras[x].partial.sort_unstable_by_key(|p| p.0);
    }
    self.tidy_extra(e);
  }

  #[cfg(test)]
  pub fn check_holders(&self) {
    for (id, edge) in self.edges.iter().enumerate() {
      if edge.is_free() {
        continue;
      }
      let len = edge.len();
      if id == super::tree::ROOT as usize {
        assert!(edge.full == 0 && edge.extra == NO_EXTRA, "the root holds nothing");
        continue;
      }
      if let Some(x) = self.extra(id as EdgeId) {
        assert!(!x.is_empty(), "edge {id} keeps an empty holder record");
        assert!(x.high.windows(2).all(|w| w[0] < w[1]) && x.high.iter().all(|&s| s >= INLINE_SLOTS));
        assert!(x.partial.windows(2).all(|w| w[0].0 < w[1].0), "partial holders of {id} sorted and unique");
        for &(s, c) in &x.partial {
          assert!(c > 0 && c < len, "cutoff {c} of slot {s} in edge {id} of length {len}");
          assert!(s >= INLINE_SLOTS || edge.full & (1u64 << s) == 0, "slot {s} both full and partial in {id}");
          assert!(x.high.binary_search(&s).is_err());
        }
      }
      if edge.children == 0 {
        assert_eq!(self.max_coverage(id as EdgeId), len, "leaf edge {id} ends with blocks nobody holds");
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::super::tree::ROOT;
  use super::*;

  #[test]
  fn coverage_moves_between_full_partial_and_none() {
    let mut t = Tree::new();
    let mut ids = Vec::new();
    let e = t.new_edge(ROOT, &[1, 2, 3, 4], &mut ids);
    for slot in [3, 70] {
      assert_eq!(t.set_coverage(e, slot, 4), 0);
      assert_eq!(t.coverage(e, slot), 4);
      assert_eq!(t.set_coverage(e, slot, 2), 4);
      assert_eq!(t.partial(e), &[(slot, 2)]);
      assert!(t.holds(ids[1], slot) && !t.holds(ids[2], slot));
      t.set_coverage(e, slot, 0);
      assert!(!t.has_holders(e));
    }
    t.set_coverage(e, 5, 4);
    t.set_coverage(e, 80, 4);
    t.set_coverage(e, 9, 1);
    let mut out = Vec::new();
    t.holders_of_block(ids[0], &mut out);
    assert_eq!(out, vec![5, 80, 9]);
    out.clear();
    t.holders_of_block(ids[1], &mut out);
    assert_eq!(out, vec![5, 80]);
    t.check_holders();
  }

  #[test]
  fn split_and_extension_keep_every_holder_on_a_prefix() {
    let mut t = Tree::new();
    let mut ids = Vec::new();
    let e = t.new_edge(ROOT, &[1, 2, 3, 4, 5], &mut ids);
    t.set_coverage(e, 0, 5);
    t.set_coverage(e, 1, 4);
    t.set_coverage(e, 2, 2);
    t.set_coverage(e, 100, 5);
    let tail = t.split(e, 2);
    assert_eq!((t.coverage(e, 0), t.coverage(e, 1), t.coverage(e, 2), t.coverage(e, 100)), (2, 2, 2, 2));
    assert_eq!((t.coverage(tail, 0), t.coverage(tail, 1), t.coverage(tail, 2), t.coverage(tail, 100)), (3, 2, 0, 3));
    t.check_holders();
    // Extending the tail for slot 0: its other full holders keep their 3 blocks.
    t.extend_leaf(tail, &[6, 7], 0, &mut ids);
    assert_eq!((t.coverage(tail, 0), t.coverage(tail, 1), t.coverage(tail, 100)), (5, 2, 3));
    assert_eq!(t.max_coverage(tail), 5);
    t.check_holders();
    // For a high slot (slot 0, a full holder too, keeps its 5 blocks); then for a slot alone.
    t.set_coverage(tail, 100, 5);
    t.extend_leaf(tail, &[8], 100, &mut ids);
    assert_eq!((t.coverage(tail, 0), t.coverage(tail, 1), t.coverage(tail, 100)), (5, 2, 6));
    t.check_holders();
    let solo = t.new_edge(ROOT, &[9], &mut ids);
    t.set_coverage(solo, 3, 1);
    t.extend_leaf(solo, &[10, 11], 3, &mut ids);
    assert_eq!(t.coverage(solo, 3), 3);
    t.check_holders();
  }
}
