//! Events mode: the engines' own block hashes are opaque keys, kept per (worker, dp_rank) only
//! to resolve a stored event's parent and a removed event's blocks (engine key -> block). The
//! tree itself is keyed by the router's local hashes, so it works whatever hash the engine uses.

use rustc_hash::FxHashMap;

use super::engine_table::{Claim, EngineTable};
use super::evict::Lru;
use super::paths::{after, follow};
use super::tree::{table_bytes, BlockId, ROOT_BLOCK};
use super::workers::{Slot, WorkerKey};
use super::{ModeState, RadixIndexer, RejectReason};

#[derive(Clone)]
pub(super) struct EventsState {
  /// Engine keys by slot.
  pub keys: Vec<EngineTable>,
  /// Engine keys beyond the first naming the same block of a slot (an engine that stores the
  /// same content twice, e.g. under two cache salts): the block stays held until all are removed.
  pub extra_refs: FxHashMap<(Slot, BlockId), u32>,
  /// The optional block cap's recency order.
  pub lru: Option<Lru>,
}

impl EventsState {
  pub fn new(capped: bool) -> Self {
    Self { keys: Vec::new(), extra_refs: FxHashMap::default(), lru: capped.then(Lru::default) }
  }

  pub fn slot_keys(&mut self, slot: Slot) -> &mut EngineTable {
    let at = slot as usize;
    if self.keys.len() <= at {
      self.keys.resize_with(at + 1, EngineTable::default);
    }
    &mut self.keys[at]
  }

  #[inline]
  pub fn lookup(&self, slot: Option<Slot>, key: u64) -> Option<BlockId> {
    self.keys.get(slot? as usize)?.get(key)
  }

  /// Takes every engine key of `slot`: the blocks they name (an id may repeat).
  pub fn take_slot(&mut self, slot: Slot) -> Vec<BlockId> {
    self.extra_refs.retain(|&(s, _), _| s != slot);
    match self.keys.get_mut(slot as usize) {
      Some(keys) => std::mem::take(keys).iter().map(|(_, b)| b).collect(),
      None => Vec::new(),
    }
  }

  pub fn on_new_leaf(&mut self, block: Option<BlockId>) {
    if let (Some(lru), Some(b)) = (&mut self.lru, block) {
      lru.on_leaf(b);
    }
  }

  pub fn bytes(&self) -> usize {
    self.keys.iter().map(EngineTable::bytes).sum::<usize>()
      + self.keys.capacity() * std::mem::size_of::<EngineTable>()
      + table_bytes(self.extra_refs.capacity(), 12)
      + self.lru.as_ref().map_or(0, Lru::bytes)
  }

  #[cfg(test)]
  pub fn check(&self, tree: &super::tree::Tree, slots: &super::workers::Slots) {
    let mut per_pair: FxHashMap<(Slot, BlockId), u32> = FxHashMap::default();
    for (slot, keys) in self.keys.iter().enumerate() {
      for (_, block) in keys.iter() {
        assert!(tree.is_live_block(block) && tree.holds(block, slot as Slot), "engine key of slot {slot} names a block it does not hold");
        *per_pair.entry((slot as Slot, block)).or_default() += 1;
      }
    }
    assert_eq!(per_pair.len() as u64, slots.total_held(), "every held block has an engine key");
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
  fn events(&self) -> Option<&EventsState> {
    match &self.state {
      ModeState::Events(ev) => Some(ev),
      ModeState::Approx(_) => None,
    }
  }

  /// A BlockStored event: `engine_hashes[i]` is the engine's name of the block whose router
  /// local hash is `local_hashes[i]`, each block the child of the previous one, the first the
  /// child of `parent` (an engine hash of this worker; None = the root). All or nothing.
  pub fn apply_stored(&mut self, key: WorkerKey, parent: Option<u64>, engine_hashes: &[u64], local_hashes: &[u64], _now_ms: f64) -> Result<(), RejectReason> {
    if self.events().is_none() {
      return Err(RejectReason::WrongMode);
    }
    match self.check_stored(key, parent, engine_hashes, local_hashes) {
      Ok(parent_block) => {
        self.store(key, parent_block, engine_hashes, local_hashes);
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

  /// Validates a stored event. On success `scratch.keys` holds the blocks' tree keys (chained
  /// keying only: local keys are the local hashes themselves, not copied),
  /// `scratch.claims` what the slot's engine table holds for each engine hash (an entry claimed
  /// for each new one, settled by `store`), and the parent block is returned. On a refusal
  /// nothing has changed (claims given back; the table may have grown).
  fn check_stored(&mut self, key: WorkerKey, parent: Option<u64>, engine: &[u64], local: &[u64]) -> Result<BlockId, RejectReason> {
    if engine.len() != local.len() {
      return Err(RejectReason::Malformed);
    }
    if parent.is_some_and(|p| engine.contains(&p)) {
      return Err(RejectReason::SelfParent);
    }
    let slot = self.slots.get(key);
    let ModeState::Events(ev) = &mut self.state else { return Err(RejectReason::WrongMode) };
    let claims = &mut self.scratch.claims;
    claims.clear();
    match slot {
      // A worker's first event: no table yet, nothing named.
      None => {
        if has_duplicates(engine, &mut self.scratch.sorted) {
          return Err(RejectReason::DuplicateHash);
        }
      }
      Some(s) => {
        // One probe per hash, finding it or claiming its entry (a repeat within the event is
        // found as the claim of its first occurrence), the lines of every hash fetched at once.
        let own = ev.slot_keys(s);
        own.reserve(engine.len());
        for &k in engine {
          own.prefetch(k);
        }
        for &k in engine {
          match own.claim(k) {
            Claim::Repeated => {
              give_back(own, engine, claims);
              return Err(RejectReason::DuplicateHash);
            }
            c => claims.push(c),
          }
        }
      }
    }
    let checked = Self::check_path(&self.tree, self.keying, ev, slot, parent, engine, local, claims, &mut self.scratch.keys, &mut self.scratch.blocks);
    if checked.is_err() {
      if let Some(s) = slot {
        give_back(ev.slot_keys(s), engine, claims);
      }
    }
    checked
  }

  /// The rest of `check_stored`, the hashes claimed: the parent is known, no hash names a block
  /// other than the one it would name, the new blocks fit.
  #[allow(clippy::too_many_arguments, reason = "the checks read the event's fields one by one; a struct for them would be built per event on the apply path")]
  fn check_path(
    tree: &super::tree::Tree,
    keying: super::Keying,
    ev: &EventsState,
    slot: Option<Slot>,
    parent: Option<u64>,
    engine: &[u64],
    local: &[u64],
    claims: &[Claim],
    keys: &mut Vec<u64>,
    found: &mut Vec<BlockId>,
  ) -> Result<BlockId, RejectReason> {
    let parent_block = match parent {
      None => ROOT_BLOCK,
      Some(p) => ev.lookup(slot, p).ok_or(RejectReason::UnknownParent)?,
    };
    let keys = Self::tree_keys(tree, keying, parent_block, local, keys);
    found.clear();
    follow(tree, after(tree, parent_block), keys, found);
    for (i, c) in claims.iter().enumerate() {
      if let Claim::Named(named) = *c {
        // Once a block is new, so are the ones after it: none can be named already.
        if found.get(i) != Some(&named) {
          return Err(RejectReason::DuplicateHash);
        }
      }
    }
    if !tree.has_room(engine.len() - found.len()) {
      return Err(RejectReason::IndexFull);
    }
    Ok(parent_block)
  }

  /// Applies a stored event `check_stored` accepted.
  fn store(&mut self, key: WorkerKey, parent_block: BlockId, engine: &[u64], local: &[u64]) {
    let slot = self.slots.intern(key);
    let keys = std::mem::take(&mut self.scratch.keys);
    let mut path = std::mem::take(&mut self.scratch.path);
    path.clear();
    let tree_keys = if self.keying == super::Keying::Local { local } else { &keys };
    self.hold_path(slot, parent_block, tree_keys, &mut path);
    self.scratch.keys = keys;
    let Self { slots, state, scratch, .. } = self;
    let ModeState::Events(ev) = state else { unreachable!("checked by apply_stored") };
    let tick = ev.lru.as_mut().map(Lru::next_tick);
    if ev.keys.len() <= slot as usize {
      ev.keys.resize_with(slot as usize + 1, EngineTable::default);
    }
    let own = &mut ev.keys[slot as usize];
    if scratch.claims.is_empty() {
      // The slot's first event (no claims were made): plain inserts.
      own.reserve(path.len());
      for (&(block, newly_held), &engine_key) in path.iter().zip(engine) {
        if newly_held {
          own.insert(engine_key, block);
        } else if own.get(engine_key).is_none() {
          own.insert(engine_key, block);
          *ev.extra_refs.entry((slot, block)).or_default() += 1;
        }
      }
    } else {
      debug_assert_eq!(scratch.claims.len(), path.len());
      for (&(block, newly_held), &claim) in path.iter().zip(&scratch.claims) {
        // A hash that named a block already names this one (checked): nothing to do.
        if let Claim::Claimed(pos) = claim {
          own.settle(pos, block);
          if !newly_held {
            // Another engine hash of the slot names this block too.
            *ev.extra_refs.entry((slot, block)).or_default() += 1;
          }
        }
      }
    }
    if let (Some(lru), Some(t)) = (&mut ev.lru, tick) {
      for &(block, _) in &path {
        lru.touch(block, t);
      }
      if let Some(&(last, _)) = path.last() {
        lru.on_leaf(last);
      }
    }
    scratch.path = path;
    if slots.held(slot) == 0 {
      // An empty event: nothing held, no slot kept.
      slots.release(slot);
    }
  }

  /// A BlockRemoved event. Returns the number of blocks removed; unknown hashes are counted in
  /// `rejected.unknown_removal`.
  pub fn apply_removed(&mut self, key: WorkerKey, engine_hashes: &[u64], _now_ms: f64) -> usize {
    if self.events().is_none() {
      return 0;
    }
    self.counters.events_applied += 1;
    let Some(slot) = self.slots.get(key) else {
      self.counters.rejected.unknown_removal += engine_hashes.len() as u64;
      return 0;
    };
    let ModeState::Events(ev) = &mut self.state else { unreachable!() };
    // First every key out of the slot's table (their lines fetched at once), then the blocks.
    let own = ev.slot_keys(slot);
    for &k in engine_hashes {
      own.prefetch(k);
    }
    let mut found = std::mem::take(&mut self.scratch.ids);
    found.clear();
    found.extend(engine_hashes.iter().filter_map(|&k| own.remove(k)));
    self.counters.rejected.unknown_removal += (engine_hashes.len() - found.len()) as u64;
    for &b in &found {
      self.tree.prefetch_block(b);
    }
    let removed = found.len();
    // A block named by other engine hashes of the slot too stays held (one reference less).
    let ModeState::Events(ev) = &mut self.state else { unreachable!() };
    if !ev.extra_refs.is_empty() {
      found.retain(|&block| match ev.extra_refs.get_mut(&(slot, block)) {
        Some(extra) => {
          *extra -= 1;
          if *extra == 0 {
            ev.extra_refs.remove(&(slot, block));
          }
          false
        }
        None => true,
      });
    }
    let mut leaves = std::mem::take(&mut self.scratch.blocks);
    leaves.clear();
    self.release_blocks(slot, &found, &mut leaves);
    if let ModeState::Events(ev) = &mut self.state {
      // A leaf of an edge that later releases of the event freed or made inner is not queued.
      for &leaf in leaves.iter().filter(|&&b| self.tree.is_live_block(b) && self.tree.is_leaf_block(b)) {
        ev.on_new_leaf(Some(leaf));
      }
    }
    self.scratch.blocks = leaves;
    self.scratch.ids = found;
    if self.slots.held(slot) == 0 {
      self.slots.release(slot);
    }
    removed
  }
}

/// Gives back the entries `claims` claimed for `engine` (a refused event).
fn give_back(own: &mut EngineTable, engine: &[u64], claims: &[Claim]) {
  for (&k, c) in engine.iter().zip(claims) {
    if matches!(c, Claim::Claimed(_)) {
      own.remove(k);
    }
  }
}

/// Whether `hashes` repeats a value (`sorted` is scratch space).
pub(super) fn has_duplicates(hashes: &[u64], sorted: &mut Vec<u64>) -> bool {
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
