//! Holding and releasing blocks, for every mode. A slot's coverage of an edge grows when it stores
//! (or is routed) a path and shrinks when one of its blocks goes: a block going from inside the
//! slot's prefix splits the edge there first (so every slot keeps holding a prefix of each edge);
//! blocks nobody holds at the end of a childless edge are dropped, and edges left empty with them.

use super::tree::{BlockId, EdgeId, Tree, ROOT, ROOT_BLOCK};
use super::workers::Slot;
use super::RadixIndexer;

/// Where a path goes on: (edge, position of the next block).
pub(super) type Cursor = (EdgeId, u32);

/// The cursor after block `parent` (ROOT_BLOCK: the root).
pub(super) fn after(tree: &Tree, parent: BlockId) -> Cursor {
  if parent == ROOT_BLOCK {
    return (ROOT, 0);
  }
  let (e, p) = tree.locate(parent);
  (e, p + 1)
}

/// Follows `keys` from `at` through the blocks that exist: their ids go to `found` (it stops at the
/// first missing one). Returns the cursor after the last one found.
pub(super) fn follow(tree: &Tree, mut at: Cursor, keys: &[u64], found: &mut Vec<BlockId>) -> Cursor {
  for &k in keys {
    let (e, q) = at;
    let edge = tree.edge(e);
    if q < edge.len() {
      if edge.keys[q as usize] != k {
        break;
      }
      found.push(edge.blocks[q as usize]);
      at = (e, q + 1);
    } else {
      match tree.child(edge.tail(), k) {
        Some(c) => {
          found.push(tree.edge(c).blocks[0]);
          at = (c, 1);
        }
        None => break,
      }
    }
  }
  at
}

impl RadixIndexer {
  /// Makes `slot` hold the path of `keys` after block `parent` (which it holds, or the root):
  /// existing blocks are covered, missing ones created (a split where the path leaves an edge
  /// midway, a leaf extension where it goes on from the end of a childless edge, a new edge
  /// otherwise). Pushes (block, whether the slot did not hold it before) for each key, in order.
  /// The caller checked the blocks fit (`Tree::has_room`).
  pub(super) fn hold_path(&mut self, slot: Slot, parent: BlockId, keys: &[u64], out: &mut Vec<(BlockId, bool)>) {
    let Self { tree, slots, scratch, .. } = self;
    let mut at = after(tree, parent);
    let mut i = 0;
    while i < keys.len() {
      let (e, q) = at;
      let edge = tree.edge(e);
      let len = edge.len();
      if q == len {
        match tree.child(edge.tail(), keys[i]) {
          Some(c) => {
            at = (c, 0);
            continue;
          }
          None => break,
        }
      }
      let run = edge.keys[q as usize..].iter().zip(&keys[i..]).take_while(|(a, b)| a == b).count() as u32;
      if run == 0 {
        break;
      }
      let cov = tree.coverage(e, slot);
      debug_assert!(cov >= q, "a path covers an edge from its holder's prefix on");
      out.extend(edge.blocks[q as usize..(q + run) as usize].iter().enumerate().map(|(j, &b)| (b, q + j as u32 >= cov)));
      if q + run > cov {
        tree.set_coverage(e, slot, q + run);
        slots.count_added(slot, (q + run - cov) as u64);
      }
      i += run as usize;
      at = (e, q + run);
    }
    if i == keys.len() {
      return;
    }
    let rest = &keys[i..];
    let (mut e, q) = at;
    if q < tree.edge(e).len() {
      tree.split(e, q);
    }
    let ids = &mut scratch.ids;
    ids.clear();
    if e != ROOT && tree.edge(e).children == 0 {
      tree.extend_leaf(e, rest, slot, ids);
    } else {
      e = tree.new_edge(e, rest, ids);
    }
    let len = tree.edge(e).len();
    tree.set_coverage(e, slot, len);
    slots.count_added(slot, rest.len() as u64);
    out.extend(ids.iter().map(|&b| (b, true)));
  }

  /// Drops the pair (slot, b); the slot holds b. Returns a block that became a leaf, if any.
  pub(super) fn release_block(&mut self, slot: Slot, b: BlockId) -> Option<BlockId> {
    let (e, p) = self.tree.locate(b);
    let cov = self.tree.coverage(e, slot);
    debug_assert!(cov > p, "the slot holds the block");
    if p + 1 < cov {
      // The slot keeps blocks after b in this edge: they move to their own edge first.
      self.tree.split(e, p + 1);
    }
    self.tree.set_coverage(e, slot, p);
    self.slots.count_removed(slot, 1);
    // Others still hold the block: nothing to trim (the common case of a shared block).
    if self.tree.edge(e).full != 0 || p + 1 < self.tree.edge(e).len() {
      return None;
    }
    self.trim(e)
  }

  /// Drops the pairs (slot, b) for the distinct blocks `blocks`, all held by the slot; pushes
  /// the blocks that became leaves. A run of them that ends the slot's coverage of an edge (an
  /// engine evicting a sequence's tail) goes at once: one coverage change and one trim, where
  /// one block at a time would move the slot's cutoff and trim the edge once per block.
  pub(super) fn release_blocks(&mut self, slot: Slot, blocks: &[BlockId], leaves: &mut Vec<BlockId>) {
    let mut located = std::mem::take(&mut self.scratch.located);
    located.clear();
    located.extend(blocks.iter().map(|&b| {
      let (e, p) = self.tree.locate(b);
      (e, p, b)
    }));
    // By edge, last position first.
    located.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut i = 0;
    while i < located.len() {
      let e = located[i].0;
      let cov = self.tree.coverage(e, slot);
      // The run cov - 1, cov - 2, ... of this edge's blocks, still where they were located
      // (nothing released before moves a block the slot still holds).
      let mut run = 0;
      while let Some(&(le, lp, b)) = located.get(i + run) {
        if le != e || lp + 1 + run as u32 != cov || self.tree.locate(b) != (le, lp) {
          break;
        }
        run += 1;
      }
      if run > 0 {
        let keep = cov - run as u32;
        self.tree.set_coverage(e, slot, keep);
        self.slots.count_removed(slot, run as u64);
        if self.tree.edge(e).full == 0 && cov == self.tree.edge(e).len() {
          leaves.extend(self.trim(e));
        }
      }
      // The edge's other blocks one at a time, last first (a split after one leaves the blocks
      // before it in place).
      i += run;
      while let Some(&(le, _, b)) = located.get(i) {
        if le != e {
          break;
        }
        leaves.extend(self.release_block(slot, b));
        i += 1;
      }
    }
    self.scratch.located = located;
  }

  /// Drops every block `slot` holds in the edges of `blocks` (a slot being cleared; ids may
  /// repeat). Returns the blocks that became leaves.
  pub(super) fn release_all(&mut self, slot: Slot, blocks: &[BlockId]) -> Vec<BlockId> {
    let mut edges: Vec<EdgeId> = blocks.iter().filter(|&&b| self.tree.is_live_block(b)).map(|&b| self.tree.locate(b).0).collect();
    edges.sort_unstable();
    edges.dedup();
    for &e in &edges {
      let cov = self.tree.set_coverage(e, slot, 0);
      self.slots.count_removed(slot, cov as u64);
    }
    let mut leaves = Vec::new();
    for &e in &edges {
      if !self.tree.edge(e).is_free() {
        leaves.extend(self.trim(e));
      }
    }
    leaves
  }

  /// After holders left `e`: drops the blocks at its end that nobody holds (when it has no
  /// children), then the edge once empty, and so on up. Returns the block that became a leaf.
  pub(super) fn trim(&mut self, mut e: EdgeId) -> Option<BlockId> {
    let tree = &mut self.tree;
    let mut lost_child = false;
    loop {
      if e == ROOT {
        return None;
      }
      let edge = tree.edge(e);
      if edge.children > 0 {
        return None;
      }
      let (len, first) = (edge.len(), edge.keys[0]);
      let keep = tree.max_coverage(e);
      if keep == len {
        return lost_child.then(|| tree.edge(e).tail());
      }
      if keep > 0 {
        tree.truncate_unheld(e, keep);
        return Some(tree.edge(e).tail());
      }
      tree.truncate(e, 0);
      e = tree.free_edge(e, first);
      lost_child = true;
    }
  }
}
