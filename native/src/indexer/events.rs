//! Events mode: the engines' own block hashes are opaque keys, kept per (worker, dp_rank) only
//! to resolve a stored event's parent and a removed event's blocks (engine key -> node). The
//! tree itself is keyed by the router's local hashes, chained, so it works whatever hash the
//! engine uses.

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use super::evict::Lru;
use super::tree::{chain_key, table_bytes, table_hash, NodeId, MAX_NODES, ROOT};
use super::workers::{Slot, WorkerKey};
use super::{ModeState, RadixIndexer, RejectReason};

/// Marks a block of a stored event that does not exist yet.
const NEW: NodeId = u32::MAX;

/// An engine key (split in two u32 so the entry packs in 12 bytes) and the node it names.
#[derive(Clone, Copy)]
struct EngineEntry {
  lo: u32,
  hi: u32,
  node: NodeId,
}

impl EngineEntry {
  #[inline]
  fn key(&self) -> u64 {
    (self.hi as u64) << 32 | self.lo as u64
  }
}

/// One slot's engine keys.
#[derive(Default)]
pub(super) struct EngineKeys {
  table: HashTable<EngineEntry>,
}

impl EngineKeys {
  #[inline]
  pub fn get(&self, key: u64) -> Option<NodeId> {
    self.table.find(table_hash(key), |e| e.key() == key).map(|e| e.node)
  }

  /// Adds `key`, which the caller checked is absent.
  pub fn insert(&mut self, key: u64, node: NodeId) {
    let entry = EngineEntry { lo: key as u32, hi: (key >> 32) as u32, node };
    self.table.insert_unique(table_hash(key), entry, |e| table_hash(e.key()));
  }

  pub fn remove(&mut self, key: u64) -> Option<NodeId> {
    let entry = self.table.find_entry(table_hash(key), |e| e.key() == key).ok()?;
    Some(entry.remove().0.node)
  }

  pub fn retain(&mut self, mut keep: impl FnMut(NodeId) -> bool) {
    self.table.retain(|e| keep(e.node));
  }

  pub fn iter(&self) -> impl Iterator<Item = (u64, NodeId)> + '_ {
    self.table.iter().map(|e| (e.key(), e.node))
  }

  pub fn len(&self) -> usize {
    self.table.len()
  }

  fn bytes(&self) -> usize {
    table_bytes(self.table.capacity(), std::mem::size_of::<EngineEntry>())
  }
}

pub(super) struct EventsState {
  /// Engine keys by slot.
  pub keys: Vec<EngineKeys>,
  /// Engine keys beyond the first naming the same block of a slot (an engine that stores the
  /// same content twice, e.g. under two cache salts): the block stays held until all are removed.
  pub extra_refs: FxHashMap<(Slot, NodeId), u32>,
  /// The optional block cap's recency order.
  pub lru: Option<Lru>,
}

impl EventsState {
  pub fn new(capped: bool) -> Self {
    Self { keys: Vec::new(), extra_refs: FxHashMap::default(), lru: capped.then(Lru::default) }
  }

  pub fn slot_keys(&mut self, slot: Slot) -> &mut EngineKeys {
    let at = slot as usize;
    if self.keys.len() <= at {
      self.keys.resize_with(at + 1, EngineKeys::default);
    }
    &mut self.keys[at]
  }

  #[inline]
  pub fn lookup(&self, slot: Option<Slot>, key: u64) -> Option<NodeId> {
    self.keys.get(slot? as usize)?.get(key)
  }

  /// Takes every engine key of `slot`: the nodes they name (an id may repeat).
  pub fn take_slot(&mut self, slot: Slot) -> Vec<NodeId> {
    self.extra_refs.retain(|&(s, _), _| s != slot);
    match self.keys.get_mut(slot as usize) {
      Some(keys) => std::mem::take(keys).iter().map(|(_, n)| n).collect(),
      None => Vec::new(),
    }
  }

  pub fn on_new_leaf(&mut self, node: NodeId) {
    if let Some(lru) = &mut self.lru {
      lru.on_leaf(node);
    }
  }

  pub fn bytes(&self) -> usize {
    self.keys.iter().map(EngineKeys::bytes).sum::<usize>()
      + self.keys.capacity() * std::mem::size_of::<EngineKeys>()
      + table_bytes(self.extra_refs.capacity(), 12)
      + self.lru.as_ref().map_or(0, Lru::bytes)
  }

  #[cfg(test)]
  pub fn check(&self, tree: &super::tree::Tree, slots: &super::workers::Slots) {
    let mut per_pair: FxHashMap<(Slot, NodeId), u32> = FxHashMap::default();
    for (slot, keys) in self.keys.iter().enumerate() {
      for (_, node) in keys.iter() {
        assert!(tree.is_live(node) && tree.holds(node, slot as Slot), "engine key of slot {slot} names a block it does not hold");
        *per_pair.entry((slot as Slot, node)).or_default() += 1;
      }
      let _ = slots;
    }
    let pairs: u64 = per_pair.len() as u64;
    assert_eq!(pairs, slots.total_held(), "every held block has an engine key");
    for (&pair, &n) in &per_pair {
      assert_eq!(self.extra_refs.get(&pair).copied().unwrap_or(0), n - 1, "extra refs of {pair:?}");
    }
    assert_eq!(self.extra_refs.len(), per_pair.values().filter(|&&n| n > 1).count());
    if let Some(lru) = &self.lru {
      lru.check(tree);
    }
  }
}

impl RadixIndexer {
  fn events(&mut self) -> Option<&mut EventsState> {
    match &mut self.state {
      ModeState::Events(ev) => Some(ev),
      ModeState::Approx(_) => None,
    }
  }

  /// A BlockStored event: `engine_hashes[i]` is the engine's name of the block whose router
  /// local hash is `local_hashes[i]`, each block the child of the previous one, the first the
  /// child of `parent` (an engine hash of this worker; None = the root). All or nothing.
  pub fn apply_stored(
    &mut self,
    key: WorkerKey,
    parent: Option<u64>,
    engine_hashes: &[u64],
    local_hashes: &[u64],
    _now_ms: f64,
  ) -> Result<(), RejectReason> {
    if self.events().is_none() {
      return Err(RejectReason::WrongMode);
    }
    match self.check_stored(key, parent, engine_hashes, local_hashes) {
      Ok(parent_node) => {
        self.store(key, parent_node, engine_hashes);
        self.counters.events_applied += 1;
        self.enforce_cap();
        Ok(())
      }
      Err(reason) => {
        self.counters.rejected.count(reason);
        Err(reason)
      }
    }
  }

  /// Validates a stored event without changing anything. On success `scratch.keys` holds the
  /// blocks' sequence hashes and `scratch.nodes` their existing nodes (NEW when absent), and the
  /// parent node is returned.
  fn check_stored(&mut self, key: WorkerKey, parent: Option<u64>, engine: &[u64], local: &[u64]) -> Result<NodeId, RejectReason> {
    if engine.len() != local.len() {
      return Err(RejectReason::Malformed);
    }
    if parent.is_some_and(|p| engine.contains(&p)) {
      return Err(RejectReason::SelfParent);
    }
    if has_duplicates(engine, &mut self.scratch.sorted) {
      return Err(RejectReason::DuplicateHash);
    }
    let slot = self.slots.get(key);
    let ModeState::Events(ev) = &self.state else { return Err(RejectReason::WrongMode) };
    let tree = &self.tree;
    let parent_node = match parent {
      None => ROOT,
      Some(p) => ev.lookup(slot, p).ok_or(RejectReason::UnknownParent)?,
    };
    let mut prev = tree.node(parent_node).key;
    let (keys, nodes) = (&mut self.scratch.keys, &mut self.scratch.nodes);
    keys.clear();
    nodes.clear();
    let mut at = parent_node;
    let mut fresh = 0usize;
    for (&engine_key, &local_hash) in engine.iter().zip(local) {
      let seq = chain_key(prev, local_hash);
      prev = seq;
      let node = match tree.lookup(seq) {
        // Once a block is new, so are its descendants: an existing one would sit elsewhere.
        Some(id) if at != NEW && tree.node(id).parent == at => id,
        Some(_) => return Err(RejectReason::HashCollision),
        None => NEW,
      };
      if let Some(named) = ev.lookup(slot, engine_key) {
        if named != node || node == NEW {
          return Err(RejectReason::DuplicateHash);
        }
      }
      fresh += (node == NEW) as usize;
      keys.push(seq);
      nodes.push(node);
      at = node;
    }
    if tree.len() + fresh > MAX_NODES - 1 {
      return Err(RejectReason::IndexFull);
    }
    Ok(parent_node)
  }

  /// Applies a stored event `check_stored` accepted.
  fn store(&mut self, key: WorkerKey, parent_node: NodeId, engine: &[u64]) {
    let slot = self.slots.intern(key);
    let Self { tree, slots, state, scratch, .. } = self;
    let ModeState::Events(ev) = state else { unreachable!("checked by apply_stored") };
    let tick = ev.lru.as_mut().map(Lru::next_tick);
    let mut at = parent_node;
    for (i, &engine_key) in engine.iter().enumerate() {
      let mut node = scratch.nodes[i];
      if node == NEW {
        node = tree.insert_child(at, scratch.keys[i]).expect("room checked by check_stored");
        if let (Some(lru), Some(t)) = (&mut ev.lru, tick) {
          lru.on_created(node, t);
        }
      } else if let (Some(lru), Some(t)) = (&mut ev.lru, tick) {
        lru.touch(node, t);
      }
      if tree.add_holder(node, slot) {
        slots.count_added(slot);
        ev.slot_keys(slot).insert(engine_key, node);
      } else if ev.lookup(Some(slot), engine_key).is_none() {
        ev.slot_keys(slot).insert(engine_key, node);
        *ev.extra_refs.entry((slot, node)).or_default() += 1;
      }
      at = node;
    }
    if slots.held(slot) == 0 {
      // An empty event: nothing held, no slot kept.
      slots.release(slot);
    }
  }

  /// A BlockRemoved event. Returns the number of blocks removed; unknown hashes are counted in
  /// `rejected.unknown_removal`.
  pub fn apply_removed(&mut self, key: WorkerKey, engine_hashes: &[u64], _now_ms: f64) -> usize {
    let Some(slot) = self.slots.get(key) else {
      if self.events().is_some() {
        self.counters.rejected.unknown_removal += engine_hashes.len() as u64;
        self.counters.events_applied += 1;
      }
      return 0;
    };
    let Self { tree, slots, state, counters, .. } = self;
    let ModeState::Events(ev) = state else { return 0 };
    let mut removed = 0;
    for &engine_key in engine_hashes {
      let Some(node) = ev.slot_keys(slot).remove(engine_key) else {
        counters.rejected.unknown_removal += 1;
        continue;
      };
      removed += 1;
      if let Some(extra) = ev.extra_refs.get_mut(&(slot, node)) {
        *extra -= 1;
        if *extra == 0 {
          ev.extra_refs.remove(&(slot, node));
        }
        continue;
      }
      tree.remove_holder(node, slot);
      slots.count_removed(slot);
      if let Some(leaf) = tree.release_unused(node) {
        ev.on_new_leaf(leaf);
      }
    }
    if slots.held(slot) == 0 {
      slots.release(slot);
    }
    counters.events_applied += 1;
    removed
  }
}

/// Whether `hashes` repeats a value (`sorted` is scratch space).
fn has_duplicates(hashes: &[u64], sorted: &mut Vec<u64>) -> bool {
  if hashes.len() <= 16 {
    return hashes.iter().enumerate().any(|(i, h)| hashes[i + 1..].contains(h));
  }
  sorted.clear();
  sorted.extend_from_slice(hashes);
  sorted.sort_unstable();
  sorted.windows(2).any(|w| w[0] == w[1])
}

#[cfg(test)]
mod tests;
