//! The active block chains of one rank as a compressed trie.
//!
//! Every booking holds a chain of blocks from block 0, so the blocks active on a rank are a union
//! of prefixes: a trie. A block is named by its path (the segments above it) and its own hash, as
//! the radix indexer names them: the prompt's local block hashes serve as they are, no chained
//! sequence hash is needed to tell two prefixes apart. A segment is a run of blocks passed by the
//! same bookings; it stores its hashes, how many bookings pass through it, and how many end at its
//! last block.
//! Segments are found by (parent segment, first hash), so booking, freeing and measuring the
//! active prefix of a prompt cost a few table lookups plus a linear compare of hashes in memory,
//! instead of one table operation per block.
//!
//! Segment ids are stable while the segment lives: a split gives the *head* a new id, so the
//! bookings ending at the tail and the children keyed under it keep theirs.

use rustc_hash::FxHashMap;

pub use crate::prefix::common_prefix;

pub type SegId = u32;
/// Parent of the top-level segments, and "no segment".
pub const NONE: SegId = u32::MAX;

#[derive(Debug, Default)]
pub struct Segment {
  pub parent: SegId,
  pub hashes: Vec<u64>,
  /// Bookings passing through (including those ending here).
  pub count: u32,
  /// XOR of the passing bookings' slots: the holder itself when count is 1.
  pub xor_slots: u32,
  /// Live child segments.
  pub children: u32,
  /// Bookings whose chain ends at this segment's last block.
  pub ends: u32,
}

#[derive(Debug, Default)]
pub struct Chains {
  segs: Vec<Segment>,
  free: Vec<SegId>,
  index: FxHashMap<(SegId, u64), SegId>,
  /// Sum of the live segments' lengths: the distinct active blocks.
  blocks: u64,
}

impl Chains {
  pub fn blocks(&self) -> u64 {
    self.blocks
  }

  pub fn is_empty(&self) -> bool {
    self.index.is_empty() && self.blocks == 0
  }

  pub fn seg(&self, id: SegId) -> &Segment {
    &self.segs[id as usize]
  }

  pub fn seg_mut(&mut self, id: SegId) -> &mut Segment {
    &mut self.segs[id as usize]
  }

  /// The child of `parent` (NONE: the root) whose first block is `first_hash`.
  pub fn child(&self, parent: SegId, first_hash: u64) -> Option<SegId> {
    self.index.get(&(parent, first_hash)).copied()
  }

  /// How many leading blocks of `seq` are active (held by at least one booking).
  pub fn prefix_len(&self, seq: &[u64]) -> usize {
    let mut parent = NONE;
    let mut pos = 0;
    while pos < seq.len() {
      let Some(s) = self.child(parent, seq[pos]) else { break };
      let hashes = &self.segs[s as usize].hashes;
      let k = common_prefix(hashes, &seq[pos..]);
      pos += k;
      if k < hashes.len() {
        break;
      }
      parent = s;
    }
    pos
  }

  /// A new segment under `parent` holding `hashes`, passed by one booking `slot` ending there.
  pub fn add(&mut self, parent: SegId, hashes: &[u64], slot: u32) -> SegId {
    let id = self.alloc();
    let s = &mut self.segs[id as usize];
    s.parent = parent;
    s.hashes.clear();
    s.hashes.extend_from_slice(hashes);
    s.count = 1;
    s.xor_slots = slot;
    s.children = 0;
    s.ends = 1;
    self.index.insert((parent, hashes[0]), id);
    if parent != NONE {
      self.segs[parent as usize].children += 1;
    }
    self.blocks += hashes.len() as u64;
    id
  }

  /// Splits segment `s` after its first `k` blocks (0 < k < len). The head gets a new id and
  /// takes `s`'s place; `s` keeps the tail, its children and the bookings ending at it.
  pub fn split(&mut self, s: SegId, k: usize) -> SegId {
    let head = self.alloc();
    let (h, t) = two_mut(&mut self.segs, head as usize, s as usize);
    debug_assert!(k > 0 && k < t.hashes.len());
    h.hashes.clear();
    h.hashes.extend_from_slice(&t.hashes[..k]);
    t.hashes.drain(..k);
    h.parent = t.parent;
    h.count = t.count;
    h.xor_slots = t.xor_slots;
    h.children = 1;
    h.ends = 0;
    t.parent = head;
    let (head_key, tail_key) = ((h.parent, h.hashes[0]), (head, t.hashes[0]));
    self.index.insert(head_key, head);
    self.index.insert(tail_key, s);
    head
  }

  /// Removes a segment no booking passes any more (it has no live children then).
  pub fn remove(&mut self, s: SegId) {
    let seg = &mut self.segs[s as usize];
    debug_assert!(seg.count == 0 && seg.children == 0 && seg.ends == 0);
    let key = (seg.parent, seg.hashes[0]);
    let parent = seg.parent;
    self.blocks -= seg.hashes.len() as u64;
    seg.hashes.clear(); // keeps its capacity for the next segment in this slot
    self.index.remove(&key);
    if parent != NONE {
      self.segs[parent as usize].children -= 1;
    }
    self.free.push(s);
  }

  fn alloc(&mut self) -> SegId {
    match self.free.pop() {
      Some(id) => id,
      None => {
        self.segs.push(Segment::default());
        (self.segs.len() - 1) as SegId
      }
    }
  }
}

fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
  assert_ne!(a, b);
  if a < b {
    let (x, y) = v.split_at_mut(b);
    (&mut x[a], &mut y[0])
  } else {
    let (x, y) = v.split_at_mut(a);
    (&mut y[0], &mut x[b])
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn split_keeps_the_tail_id_and_prefix_walks_segments() {
    let mut c = Chains::default();
    let a = c.add(NONE, &[1, 2, 3, 4], 7);
    assert_eq!(c.prefix_len(&[1, 2, 3, 4, 5]), 4);
    let head = c.split(a, 2);
    assert_eq!(c.seg(head).hashes, vec![1, 2]);
    assert_eq!(c.seg(a).hashes, vec![3, 4]);
    assert_eq!((c.seg(a).parent, c.seg(head).children), (head, 1));
    assert_eq!(c.child(NONE, 1), Some(head));
    assert_eq!(c.child(head, 3), Some(a));
    assert_eq!(c.prefix_len(&[1, 2, 3, 9]), 3);
    assert_eq!(c.prefix_len(&[1, 2, 3, 4, 5]), 4);
    assert_eq!(c.prefix_len(&[2]), 0);
    assert_eq!(c.blocks(), 4);
    c.seg_mut(a).count = 0;
    c.seg_mut(a).ends = 0;
    c.remove(a);
    assert_eq!(c.seg(head).children, 0);
    assert_eq!(c.prefix_len(&[1, 2, 3]), 2);
  }
}
