//! The compressed radix tree's storage. An edge holds a run of blocks (their keys inline, so a walk
//! compares a prompt against a whole run with sequential reads); child edges hang from a block
//! (always the last of its edge) and are found by (parent block, first key) in one global table.
//! Each block has a stable id (engine keys, routing times and LRU stamps name blocks by id, and
//! edges their parent block), kept across splits, with its (edge, position) in a side array: a
//! split only moves the tail's blocks, never the children's links.
//!
//! Who holds which blocks of an edge is `holders.rs`; this file only moves blocks around: new
//! edges, leaf extension, splits and truncation.

use hashbrown::HashTable;

use super::positions::Positions;


pub type EdgeId = u32;
pub type BlockId = u32;
pub const ROOT: EdgeId = 0;
/// The parent block of the root's children.
pub const ROOT_BLOCK: BlockId = u32::MAX;
/// `parent` of a free edge.
const FREE_PARENT: BlockId = u32::MAX - 1;
/// `edge` of a free block id (its position holds the next free id).
const FREE_EDGE: EdgeId = u32::MAX;
const NO_FREE: u32 = u32::MAX;
/// No extra holder record (edge.extra).
pub const NO_EXTRA: u32 = u32::MAX;
/// Block ids stay below this (the top values are sentinels).
pub const MAX_BLOCKS: usize = (u32::MAX - 2) as usize;

#[derive(Clone)]
pub struct Edge {
  /// The block this edge hangs from (ROOT_BLOCK: a child of the root).
  pub parent: BlockId,
  /// Child edges (hanging from this edge's last block).
  pub children: u32,
  /// Slots < 64 holding every block of the edge.
  pub full: u64,
  /// Index into `Tree::extras` (slots >= 64 holding it all, and slots holding a prefix), or NO_EXTRA.
  pub extra: u32,
  /// Blocks from the root to this edge's first block.
  pub depth: u32,
  pub keys: Vec<u64>,
  pub blocks: Vec<BlockId>,
}

impl Edge {
  fn new(parent: BlockId, depth: u32) -> Self {
    Self { parent, children: 0, full: 0, extra: NO_EXTRA, depth, keys: Vec::new(), blocks: Vec::new() }
  }

  #[inline(always)]
  pub fn len(&self) -> u32 {
    self.keys.len() as u32
  }

  #[inline]
  pub fn is_free(&self) -> bool {
    self.parent == FREE_PARENT
  }

  /// The block children of this edge hang from (ROOT_BLOCK for the root).
  #[inline(always)]
  pub fn tail(&self) -> BlockId {
    self.blocks.last().copied().unwrap_or(ROOT_BLOCK)
  }
}

/// Holders an inline mask cannot say: full holders with slot >= 64 and prefix holders.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct Extra {
  /// Slots >= 64 holding every block, sorted.
  pub high: Vec<u32>,
  /// (slot, cutoff): the slot holds the edge's first `cutoff` blocks, 0 < cutoff < len; sorted by slot.
  pub partial: Vec<(u32, u32)>,
}

impl Extra {
  pub fn is_empty(&self) -> bool {
    self.high.is_empty() && self.partial.is_empty()
  }
}

/// A child in the children table: found by (parent block, first key), verified in the entry itself.
#[derive(Clone, Copy)]
struct ChildEntry {
  first: u64,
  parent: BlockId,
  child: EdgeId,
}

#[inline(always)]
fn child_hash(parent: BlockId, first: u64) -> u64 {
  let p = ((first ^ 0x243F_6A88_85A3_08D3) as u128) * ((parent as u64 ^ 0x9E37_79B9_7F4A_7C15) as u128);
  (p as u64) ^ ((p >> 64) as u64)
}

/// The root's key when blocks are keyed by their chain (`Keying::Chained`, snapshot version 1).
pub const ROOT_KEY: u64 = 0;

/// Chained key of a block from its parent's key and its local hash (version 1 snapshots key
/// blocks by it): one folded multiply.
#[inline(always)]
pub fn chain_key(parent: u64, local: u64) -> u64 {
  let p = ((parent ^ 0x2D35_8DCC_AA6C_78A5) as u128) * ((local ^ 0x8BB8_4B93_962E_ACC9) as u128);
  (p as u64) ^ ((p >> 64) as u64)
}

/// Bytes a hashbrown table of `capacity` entries of `entry` bytes allocates (buckets rounded up
/// to a power of two at 7/8 load, one control byte per bucket plus one group).
pub fn table_bytes(capacity: usize, entry: usize) -> usize {
  if capacity == 0 {
    return 0;
  }
  let buckets = if capacity < 8 { (capacity + 1).next_power_of_two().max(4) } else { (capacity * 8 / 7).next_power_of_two() };
  buckets * (entry + 1) + 16
}

/// Fetches the cache line of `value` ahead of its use (a hint; no-op off x86_64).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
  #[cfg(target_arch = "x86_64")]
  // SAFETY: a prefetch never faults and `value` is a valid reference.
  unsafe {
    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(value as *const T as *const i8);
  }
  #[cfg(not(target_arch = "x86_64"))]
  let _ = value;
}

/// One folded multiply: a well spread hash of any u64 (engine keys, ids).
#[inline(always)]
pub fn table_hash(key: u64) -> u64 {
  let p = (key ^ 0x243F_6A88_85A3_08D3) as u128 * 0x9E37_79B9_7F4A_7C15u128;
  (p as u64) ^ ((p >> 64) as u64)
}

#[derive(Clone)]
pub struct Tree {
  pub edges: Vec<Edge>,
  free_edges: Vec<EdgeId>,
  pub extras: Vec<Extra>,
  free_extras: Vec<u32>,
  children: HashTable<ChildEntry>,
  /// (edge, position) of each block id; (FREE_EDGE, next free id) for free ids.
  at: Positions,
  free_block: u32,
  live_blocks: usize,
  live_edges: usize,
}

impl Default for Tree {
  fn default() -> Self {
    Self::new()
  }
}

impl Tree {
  pub fn new() -> Self {
    Self {
      edges: vec![Edge::new(ROOT_BLOCK, 0)],
      free_edges: Vec::new(),
      extras: Vec::new(),
      free_extras: Vec::new(),
      children: HashTable::new(),
      at: Positions::default(),
      free_block: NO_FREE,
      live_blocks: 0,
      live_edges: 0,
    }
  }

  /// Live blocks (the tree's distinct blocks).
  #[inline]
  pub fn len(&self) -> usize {
    self.live_blocks
  }

  /// Live edges, the root excluded.
  pub fn edge_count(&self) -> usize {
    self.live_edges
  }

  #[inline(always)]
  pub fn edge(&self, id: EdgeId) -> &Edge {
    &self.edges[id as usize]
  }

  #[inline(always)]
  pub fn edge_mut(&mut self, id: EdgeId) -> &mut Edge {
    &mut self.edges[id as usize]
  }

  /// One past the highest block id ever used.
  pub fn block_bound(&self) -> usize {
    self.at.len()
  }

  #[inline]
  pub fn is_live_block(&self, b: BlockId) -> bool {
    self.at.get(b as usize).is_some_and(|&(e, _)| e != FREE_EDGE)
  }

  /// The edge and position of a live block.
  #[inline(always)]
  pub fn locate(&self, b: BlockId) -> (EdgeId, u32) {
    self.at.at(b as usize)
  }

  /// Fetches the position of block `b` ahead of `locate`.
  #[inline(always)]
  pub fn prefetch_block(&self, b: BlockId) {
    if let Some(at) = self.at.get(b as usize) {
      prefetch(at);
    }
  }

  /// The key of a live block (ROOT_BLOCK: the root's, 0).
  pub fn key_of(&self, b: BlockId) -> u64 {
    if b == ROOT_BLOCK {
      return 0;
    }
    let (e, p) = self.locate(b);
    self.edges[e as usize].keys[p as usize]
  }

  /// Whether block `b` is the last of a childless edge (a leaf of the block tree).
  pub fn is_leaf_block(&self, b: BlockId) -> bool {
    let (e, p) = self.locate(b);
    let edge = self.edge(e);
    edge.children == 0 && p + 1 == edge.len()
  }

  /// The block before `b` on its path (None for a block at depth 0).
  #[cfg(test)]
  pub fn parent_block(&self, b: BlockId) -> Option<BlockId> {
    let (e, p) = self.locate(b);
    let edge = self.edge(e);
    if p > 0 {
      return Some(edge.blocks[p as usize - 1]);
    }
    (edge.parent != ROOT_BLOCK).then_some(edge.parent)
  }

  /// The edge `edge` hangs from.
  #[inline]
  pub fn parent_edge(&self, edge: EdgeId) -> EdgeId {
    match self.edge(edge).parent {
      ROOT_BLOCK => ROOT,
      b => self.locate(b).0,
    }
  }

  /// Depth of a block (0 = a child of the root).
  pub fn depth_of(&self, b: BlockId) -> u32 {
    let (e, p) = self.locate(b);
    self.edge(e).depth + p
  }

  /// The child edge hanging from block `parent` (ROOT_BLOCK: the root) whose first key is `first`.
  #[inline(always)]
  pub fn child(&self, parent: BlockId, first: u64) -> Option<EdgeId> {
    self.children.find(child_hash(parent, first), |c| c.first == first && c.parent == parent).map(|c| c.child)
  }

  /// The child edge of edge `parent` whose first key is `first`.
  #[inline(always)]
  pub fn child_of_edge(&self, parent: EdgeId, first: u64) -> Option<EdgeId> {
    self.child(self.edge(parent).tail(), first)
  }

  fn link(&mut self, parent: BlockId, first: u64, child: EdgeId) {
    self.children.insert_unique(child_hash(parent, first), ChildEntry { first, parent, child }, |c| child_hash(c.parent, c.first));
  }

  fn unlink(&mut self, parent: BlockId, first: u64) {
    if let Ok(entry) = self.children.find_entry(child_hash(parent, first), |c| c.first == first && c.parent == parent) {
      entry.remove();
    }
  }

  /// Whether `n` more blocks fit in the id space.
  pub fn has_room(&self, n: usize) -> bool {
    self.live_blocks + n <= MAX_BLOCKS
  }

  fn alloc_block(&mut self, edge: EdgeId, pos: u32) -> BlockId {
    self.live_blocks += 1;
    if self.free_block != NO_FREE {
      let id = self.free_block;
      self.free_block = self.locate(id).1;
      self.at.set(id as usize, (edge, pos));
      return id;
    }
    self.at.push((edge, pos));
    (self.at.len() - 1) as BlockId
  }

  fn free_block_id(&mut self, b: BlockId) {
    self.at.set(b as usize, (FREE_EDGE, self.free_block));
    self.free_block = b;
    self.live_blocks -= 1;
  }

  fn alloc_edge(&mut self, parent: BlockId, depth: u32) -> EdgeId {
    self.live_edges += 1;
    match self.free_edges.pop() {
      Some(id) => {
        self.edges[id as usize] = Edge::new(parent, depth);
        id
      }
      None => {
        self.edges.push(Edge::new(parent, depth));
        (self.edges.len() - 1) as EdgeId
      }
    }
  }

  /// A new child edge of edge `parent` holding `keys` (non-empty; the caller checked no child of
  /// `parent` starts with keys[0] and that the ids fit). The new block ids are appended to `ids`.
  pub fn new_edge(&mut self, parent: EdgeId, keys: &[u64], ids: &mut Vec<BlockId>) -> EdgeId {
    debug_assert!(!keys.is_empty() && self.child_of_edge(parent, keys[0]).is_none());
    let p = self.edge(parent);
    let (hang, depth) = (p.tail(), p.depth + p.len());
    let id = self.alloc_edge(hang, depth);
    self.edges[parent as usize].children += 1;
    self.link(hang, keys[0], id);
    self.append_blocks(id, keys, ids);
    id
  }

  /// Appends `keys` as new blocks at the end of `edge`, a childless non-root edge (leaf extension).
  pub fn extend(&mut self, edge: EdgeId, keys: &[u64], ids: &mut Vec<BlockId>) {
    debug_assert!(edge != ROOT && self.edge(edge).children == 0);
    self.append_blocks(edge, keys, ids);
  }

  fn append_blocks(&mut self, edge: EdgeId, keys: &[u64], ids: &mut Vec<BlockId>) {
    let start = self.edge(edge).len();
    let n = keys.len();
    let e = &mut self.edges[edge as usize];
    // A run that grows is a sequence being stored event by event (chained events extend the
    // leaf): doubling copies it about once, where growing by a quarter copied it about four
    // times (measured: ~5% of a stored event; +0.4 bytes per block in the bench's workload).
    if e.keys.len() + n > e.keys.capacity() {
      let extra = n.max(e.keys.len());
      e.keys.reserve_exact(extra);
      e.blocks.reserve_exact(extra);
    }
    e.keys.extend_from_slice(keys);
    let first = ids.len();
    if self.free_block == NO_FREE {
      // No freed id to reuse: the new blocks take the next ids in one run.
      let base = self.at.push_run(edge, start, n);
      self.live_blocks += n;
      ids.extend(base as BlockId..(base + n) as BlockId);
    } else {
      for i in 0..n as u32 {
        let b = self.alloc_block(edge, start + i);
        ids.push(b);
      }
    }
    self.edges[edge as usize].blocks.extend_from_slice(&ids[first..]);
  }

  /// Splits `edge` before position `at` (0 < at < len): blocks [at..] move to a new child edge,
  /// which the edge's children now hang from (they hang from the same last block). Holders are
  /// the caller's (holders.rs); the new edge starts with none. Returns the new (tail) edge.
  pub fn split_raw(&mut self, edge: EdgeId, at: u32) -> EdgeId {
    debug_assert!(at > 0 && at < self.edge(edge).len());
    let (keys, blocks, children, depth) = {
      let e = &mut self.edges[edge as usize];
      let keys = e.keys.split_off(at as usize);
      let blocks = e.blocks.split_off(at as usize);
      e.keys.shrink_to(e.keys.len() + e.keys.len() / 4);
      e.blocks.shrink_to(e.blocks.len() + e.blocks.len() / 4);
      (keys, blocks, std::mem::replace(&mut e.children, 1), e.depth + at)
    };
    let hang = self.edge(edge).tail();
    let tail = self.alloc_edge(hang, depth);
    for (i, &b) in blocks.iter().enumerate() {
      self.at.set(b as usize, (tail, i as u32));
    }
    self.link(hang, keys[0], tail);
    let t = &mut self.edges[tail as usize];
    t.keys = keys;
    t.blocks = blocks;
    t.children = children;
    tail
  }

  /// Drops the blocks of childless `edge` from position `len` on; their ids are freed. The
  /// caller frees an edge left empty (`free_edge`).
  pub fn truncate(&mut self, edge: EdgeId, len: u32) {
    debug_assert!(self.edge(edge).children == 0);
    let e = &mut self.edges[edge as usize];
    if len >= e.len() {
      return;
    }
    e.keys.truncate(len as usize);
    let dropped = std::mem::take(&mut e.blocks);
    for &b in &dropped[len as usize..] {
      self.free_block_id(b);
    }
    let mut blocks = dropped;
    blocks.truncate(len as usize);
    self.edges[edge as usize].blocks = blocks;
  }

  /// Frees an empty childless edge whose first key was `first_key`; returns the parent edge,
  /// which lost a child.
  pub fn free_edge(&mut self, edge: EdgeId, first_key: u64) -> EdgeId {
    debug_assert!(edge != ROOT && self.edge(edge).len() == 0 && self.edge(edge).children == 0);
    let parent = self.parent_edge(edge);
    let hang = self.edge(edge).parent;
    self.unlink(hang, first_key);
    self.edges[parent as usize].children -= 1;
    let extra = self.edges[edge as usize].extra;
    if extra != NO_EXTRA {
      self.release_extra(extra);
    }
    self.edges[edge as usize] = Edge::new(FREE_PARENT, 0);
    self.free_edges.push(edge);
    self.live_edges -= 1;
    parent
  }

  pub fn alloc_extra(&mut self) -> u32 {
    match self.free_extras.pop() {
      Some(i) => i,
      None => {
        self.extras.push(Extra::default());
        (self.extras.len() - 1) as u32
      }
    }
  }

  pub fn release_extra(&mut self, i: u32) {
    self.extras[i as usize] = Extra::default();
    self.free_extras.push(i);
  }

  /// Live edge ids with every parent before its children (the snapshot order), root excluded.
  pub fn topological_order(&self) -> Vec<EdgeId> {
    // The children of every block at once (one table scan).
    let mut kids: rustc_hash::FxHashMap<BlockId, Vec<EdgeId>> = Default::default();
    for c in self.children.iter() {
      kids.entry(c.parent).or_default().push(c.child);
    }
    for v in kids.values_mut() {
      v.sort_unstable_by(|a, b| b.cmp(a));
    }
    let mut order = Vec::with_capacity(self.live_edges);
    let mut stack: Vec<EdgeId> = kids.get(&ROOT_BLOCK).cloned().unwrap_or_default();
    while let Some(e) = stack.pop() {
      order.push(e);
      if let Some(c) = kids.get(&self.edge(e).tail()) {
        stack.extend(c.iter());
      }
    }
    order
  }

  /// Allocated bytes: edges, their runs, holder records, the children table and block positions.
  pub fn bytes(&self) -> usize {
    let runs: usize = self.edges.iter().map(|e| e.keys.capacity() * 8 + e.blocks.capacity() * 4).sum();
    let extras: usize = self.extras.iter().map(|x| x.high.capacity() * 4 + x.partial.capacity() * 8).sum();
    self.edges.capacity() * std::mem::size_of::<Edge>()
      + runs
      + self.free_edges.capacity() * 4
      + self.extras.capacity() * std::mem::size_of::<Extra>()
      + extras
      + self.free_extras.capacity() * 4
      + table_bytes(self.children.capacity(), std::mem::size_of::<ChildEntry>())
      + self.at.bytes()
  }

  /// Room for `edges` more edges (snapshot restore; block positions come in chunks).
  pub fn reserve(&mut self, edges: usize) {
    self.edges.reserve_exact(edges);
    self.children.reserve(edges, |c| child_hash(c.parent, c.first));
  }

  #[cfg(test)]
  pub fn check_structure(&self) {
    let mut children = vec![0u32; self.edges.len()];
    let mut live_edges = 0;
    let mut live_blocks = 0;
    for (id, e) in self.edges.iter().enumerate() {
      if id == ROOT as usize || e.is_free() {
        continue;
      }
      live_edges += 1;
      assert!(e.len() > 0, "edge {id} is empty");
      assert_eq!(e.keys.len(), e.blocks.len());
      let parent = self.parent_edge(id as EdgeId);
      assert!(parent == ROOT || !self.edge(parent).is_free(), "edge {id} has a dead parent");
      assert_eq!(self.edge(parent).tail(), e.parent, "edge {id} hangs from the middle of an edge");
      children[parent as usize] += 1;
      assert_eq!(self.child(e.parent, e.keys[0]), Some(id as EdgeId), "edge {id} is not its parent's child");
      let parent_depth = self.edge(parent).depth + self.edge(parent).len();
      assert_eq!(e.depth, parent_depth, "depth of edge {id}");
      for (p, &b) in e.blocks.iter().enumerate() {
        assert_eq!(self.locate(b), (id as EdgeId, p as u32), "position of block {b}");
        live_blocks += 1;
      }
    }
    for (id, e) in self.edges.iter().enumerate() {
      if !e.is_free() {
        assert_eq!(e.children, children[id], "children count of edge {id}");
      }
    }
    assert_eq!(self.children.len(), live_edges);
    assert_eq!(live_edges, self.live_edges);
    assert_eq!(live_blocks, self.live_blocks);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn edges_extend_split_and_truncate_keep_block_ids() {
    let mut t = Tree::new();
    let mut ids = Vec::new();
    let a = t.new_edge(ROOT, &[1, 2, 3], &mut ids);
    assert_eq!(ids, vec![0, 1, 2]);
    t.extend(a, &[4, 5], &mut ids);
    let b = t.new_edge(a, &[9], &mut ids);
    assert_eq!(t.child(ROOT_BLOCK, 1), Some(a));
    assert_eq!(t.child_of_edge(a, 9), Some(b));
    assert_eq!(t.edge(b).depth, 5);
    t.check_structure();
    let tail = t.split_raw(a, 2);
    assert_eq!(t.edge(a).keys, vec![1, 2]);
    assert_eq!(t.edge(tail).keys, vec![3, 4, 5]);
    assert_eq!(t.child_of_edge(a, 3), Some(tail));
    assert_eq!(t.child_of_edge(tail, 9), Some(b), "the children hang from the tail now");
    assert_eq!(t.parent_edge(b), tail);
    assert_eq!(t.locate(3), (tail, 1), "block ids survive the split");
    assert_eq!(t.parent_block(5), Some(4));
    assert_eq!(t.parent_block(2), Some(1));
    assert_eq!(t.parent_block(0), None);
    assert_eq!(t.depth_of(5), 5);
    t.check_structure();
    t.truncate(b, 0);
    assert_eq!(t.free_edge(b, 9), tail);
    t.truncate(tail, 1);
    assert!(!t.is_live_block(3) && !t.is_live_block(4) && !t.is_live_block(5));
    assert_eq!(t.len(), 3);
    assert!(t.is_leaf_block(2));
    t.check_structure();
    let mut ids = Vec::new();
    t.new_edge(ROOT, &[7], &mut ids);
    assert!([3, 4, 5].contains(&ids[0]), "freed ids are reused");
    assert_eq!(t.topological_order().len(), 3);
  }

  #[test]
  fn table_bytes_counts_buckets() {
    assert_eq!(table_bytes(0, 4), 0);
    assert_eq!(table_bytes(3, 4), 4 * 5 + 16);
    assert_eq!(table_bytes(7 * 128, 4), 1024 * 5 + 16);
  }
}
