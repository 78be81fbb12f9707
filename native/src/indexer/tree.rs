//! The radix tree's storage: an arena of 24-byte nodes with u32 ids, and ONE global table
//! (keytable.rs) that finds a node from its key. A node's key is a chained hash of the path from
//! the root to it (`key(child) = chain_key(key(parent), local)`, the root's key being 0), so
//! the lookups of a prompt's successive blocks do not depend on each other's results:
//! the walk can fetch the blocks ahead while it matches the current one, instead of chasing one
//! pointer per block. The parent stored in each node guards against the (2^-64) case of two
//! paths sharing a key.

use super::keytable::KeyTable;

pub type NodeId = u32;
pub const ROOT: NodeId = 0;
/// Key of the root, the start of every chain.
pub const ROOT_KEY: u64 = 0;
/// `parent` of a node on the free list (its `workers` holds the next free id).
const FREE: NodeId = u32::MAX;
const NO_FREE: u64 = u64::MAX;
/// Ids stay below 2^31 so the children count can lend its top bit to the spill flag.
pub const MAX_NODES: usize = (1 << 31) - 1;
/// Top bit of `children`: some slot >= 64 holds this node (see `Tree::spill`).
pub(super) const SPILL_FLAG: u32 = 1 << 31;

#[derive(Clone, Copy, Debug)]
pub struct Node {
  /// Sequence hash of the path root..=this node.
  pub key: u64,
  /// Bit s set: slot s (< 64) holds this block.
  pub workers: u64,
  pub parent: NodeId,
  /// Number of child nodes, | SPILL_FLAG.
  pub(super) children: u32,
}

pub struct Tree {
  pub(super) nodes: Vec<Node>,
  pub(super) index: KeyTable,
  free_head: u64,
  live: usize,
  /// Holders with slot >= 64 (sorted), for the nodes whose SPILL_FLAG is set.
  pub(super) spill: rustc_hash::FxHashMap<NodeId, Vec<u32>>,
}

/// Key of a child from its parent's key and its local hash: one folded multiply (a ~2 ns step
/// of the walk's serial chain; the local hashes are XXH3 outputs, the parent key already mixed).
/// Its output is well spread in every bit, so the key table uses it as its own hash.
#[inline(always)]
pub fn chain_key(parent: u64, local: u64) -> u64 {
  let p = ((parent ^ 0x2D35_8DCC_AA6C_78A5) as u128) * ((local ^ 0x8BB8_4B93_962E_ACC9) as u128);
  (p as u64) ^ ((p >> 64) as u64)
}

/// Table hash of a key. Keys are already hashes, but tests and callers may pass small numbers:
/// one folded multiply spreads any input over the low bits (bucket) and top bits (tag).
#[inline(always)]
pub fn table_hash(key: u64) -> u64 {
  let p = (key ^ 0x243F_6A88_85A3_08D3) as u128 * 0x9E37_79B9_7F4A_7C15u128;
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

impl Default for Tree {
  fn default() -> Self {
    Self::new()
  }
}

impl Tree {
  pub fn new() -> Self {
    Self {
      nodes: vec![Node { key: ROOT_KEY, workers: 0, parent: ROOT, children: 0 }],
      index: KeyTable::default(),
      free_head: NO_FREE,
      live: 0,
      spill: Default::default(),
    }
  }

  /// Live nodes, the root excluded.
  #[inline]
  pub fn len(&self) -> usize {
    self.live
  }

  #[inline(always)]
  pub fn node(&self, id: NodeId) -> &Node {
    &self.nodes[id as usize]
  }

  #[inline(always)]
  pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
    &mut self.nodes[id as usize]
  }

  /// Size of the id space (live, free and root): ids are below it.
  #[inline]
  pub fn id_bound(&self) -> usize {
    self.nodes.len()
  }

  #[inline]
  pub fn is_live(&self, id: NodeId) -> bool {
    id != ROOT && (id as usize) < self.nodes.len() && self.nodes[id as usize].parent != FREE
  }

  #[inline(always)]
  pub fn children(&self, id: NodeId) -> u32 {
    self.nodes[id as usize].children & !SPILL_FLAG
  }

  /// The node whose key is `key`, if any (whatever its parent).
  #[inline(always)]
  pub fn lookup(&self, key: u64) -> Option<NodeId> {
    self.index.find(key, &self.nodes)
  }

  /// The child of `parent` whose key is `key`.
  #[cfg(test)]
  pub fn child(&self, parent: NodeId, key: u64) -> Option<NodeId> {
    self.lookup(key).filter(|&id| self.nodes[id as usize].parent == parent)
  }

  /// Adds a child of `parent` with key `key`, which the caller checked is absent. None when the
  /// id space is exhausted.
  pub fn insert_child(&mut self, parent: NodeId, key: u64) -> Option<NodeId> {
    debug_assert!(self.lookup(key).is_none());
    let node = Node { key, workers: 0, parent, children: 0 };
    let id = if self.free_head != NO_FREE {
      let id = self.free_head as NodeId;
      self.free_head = self.nodes[id as usize].workers;
      self.nodes[id as usize] = node;
      id
    } else {
      if self.nodes.len() > MAX_NODES {
        return None;
      }
      if self.nodes.len() == self.nodes.capacity() {
        // Grow by an eighth, not by doubling: the arena is most of the index's memory.
        self.nodes.reserve_exact((self.nodes.len() / 8).max(64));
      }
      self.nodes.push(node);
      (self.nodes.len() - 1) as NodeId
    };
    self.index.insert(key, id, &self.nodes);
    self.nodes[parent as usize].children += 1;
    self.live += 1;
    Some(id)
  }

  #[inline]
  pub fn has_holders(&self, id: NodeId) -> bool {
    let n = &self.nodes[id as usize];
    n.workers != 0 || n.children & SPILL_FLAG != 0
  }

  /// Frees `id` and then its ancestors for as long as they hold nothing and have no children.
  /// Returns the nearest surviving non-root ancestor that was left without children (a new
  /// leaf, which the LRU must learn about), if any.
  pub fn release_unused(&mut self, mut id: NodeId) -> Option<NodeId> {
    while id != ROOT && !self.has_holders(id) && self.children(id) == 0 {
      let parent = self.nodes[id as usize].parent;
      self.free(id);
      self.nodes[parent as usize].children -= 1;
      if parent != ROOT && self.children(parent) == 0 && self.has_holders(parent) {
        return Some(parent);
      }
      id = parent;
    }
    None
  }

  fn free(&mut self, id: NodeId) {
    let key = self.nodes[id as usize].key;
    self.index.remove(key, id);
    let n = &mut self.nodes[id as usize];
    n.parent = FREE;
    n.children = 0;
    n.workers = self.free_head;
    self.free_head = id as u64;
    self.live -= 1;
  }

  /// Live node ids with every parent before its children (the snapshot order).
  pub fn topological_order(&self) -> Vec<NodeId> {
    const UNSEEN: u8 = 0;
    const DONE: u8 = 1;
    let mut state = vec![UNSEEN; self.nodes.len()];
    state[ROOT as usize] = DONE;
    let mut order = Vec::with_capacity(self.live);
    let mut chain = Vec::new();
    for id in 1..self.nodes.len() as NodeId {
      if !self.is_live(id) || state[id as usize] == DONE {
        continue;
      }
      let mut at = id;
      while state[at as usize] != DONE {
        chain.push(at);
        state[at as usize] = DONE;
        at = self.nodes[at as usize].parent;
      }
      order.extend(chain.drain(..).rev());
    }
    order
  }

  /// Allocated bytes: the arena, the key table and the spilled holder lists.
  pub fn bytes(&self) -> usize {
    let spill: usize = self.spill.values().map(|v| v.capacity() * 4 + 24 + 4).sum();
    self.nodes.capacity() * std::mem::size_of::<Node>()
      + self.index.bytes()
      + table_bytes(self.spill.capacity(), 4 + 24)
      + spill
  }

  /// Reserves room for `additional` more nodes (snapshot restore).
  pub fn reserve(&mut self, additional: usize) {
    self.nodes.reserve_exact(additional);
    self.index.reserve(additional, &self.nodes);
  }

  #[cfg(test)]
  pub fn check(&self) {
    let mut children = vec![0u32; self.nodes.len()];
    let mut live = 0;
    for id in 1..self.nodes.len() as NodeId {
      if !self.is_live(id) {
        continue;
      }
      live += 1;
      let n = self.node(id);
      assert!(n.parent == ROOT || self.is_live(n.parent), "node {id} has a dead parent");
      children[n.parent as usize] += 1;
      assert_eq!(self.lookup(n.key), Some(id), "node {id} not indexed by its key");
      assert!(self.has_holders(id) || self.children(id) > 0, "node {id} is unused but alive");
      assert_eq!(n.children & SPILL_FLAG != 0, self.spill.contains_key(&id), "spill flag of {id}");
    }
    for (id, &c) in children.iter().enumerate() {
      if id == 0 || self.is_live(id as NodeId) {
        assert_eq!(self.children(id as NodeId), c, "children count of {id}");
      }
    }
    assert_eq!(live, self.live);
    assert_eq!(self.index.len(), self.live);
    self.index.check(&self.nodes);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn insert_lookup_release_cascades_up() {
    let mut t = Tree::new();
    let a = t.insert_child(ROOT, 10).unwrap();
    let b = t.insert_child(a, 20).unwrap();
    t.node_mut(b).workers = 1;
    assert_eq!(t.child(ROOT, 10), Some(a));
    assert_eq!(t.child(a, 20), Some(b));
    assert_eq!(t.child(ROOT, 20), None, "the parent guards against key aliasing");
    assert_eq!(t.len(), 2);
    t.check();
    t.node_mut(b).workers = 0;
    assert_eq!(t.release_unused(b), None);
    assert_eq!(t.len(), 0);
    assert_eq!(t.lookup(10), None);
    t.check();
  }

  #[test]
  fn release_reports_the_new_leaf_and_ids_are_reused() {
    let mut t = Tree::new();
    let a = t.insert_child(ROOT, 1).unwrap();
    let b = t.insert_child(a, 2).unwrap();
    t.node_mut(a).workers = 1;
    assert_eq!(t.release_unused(b), Some(a));
    assert!(!t.is_live(b));
    let c = t.insert_child(a, 3).unwrap();
    assert_eq!(c, b, "freed ids are reused");
    t.node_mut(c).workers = 2;
    t.check();
  }

  #[test]
  fn topological_order_puts_parents_first_even_with_reused_ids() {
    let mut t = Tree::new();
    let a = t.insert_child(ROOT, 1).unwrap();
    let b = t.insert_child(ROOT, 2).unwrap();
    t.node_mut(a).workers = 1;
    t.node_mut(b).workers = 1;
    t.node_mut(a).workers = 0;
    t.release_unused(a);
    // `a`'s id now hosts a grandchild of the root, whose parent has a higher id.
    let c = t.insert_child(b, 3).unwrap();
    assert_eq!(c, a);
    t.node_mut(c).workers = 1;
    assert_eq!(t.topological_order(), vec![b, c]);
  }

  #[test]
  fn table_bytes_counts_buckets() {
    assert_eq!(table_bytes(0, 4), 0);
    assert_eq!(table_bytes(3, 4), 4 * 5 + 16);
    assert_eq!(table_bytes(7 * 128, 4), 1024 * 5 + 16);
  }
}
