//! Who holds what. Each (worker, dp_rank) pair is interned as a small slot number (the lowest
//! free one, so that up to 64 pairs all fit inline); a node's holders are an inline u64 mask for
//! slots 0..64 and, only for the nodes some slot >= 64 holds, a sorted spill list.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use super::tree::{NodeId, Tree, SPILL_FLAG};
pub use crate::load::WorkerKey;

pub type Slot = u32;
pub const INLINE_SLOTS: Slot = 64;

#[derive(Default)]
pub struct Slots {
  keys: Vec<Option<WorkerKey>>,
  ids: FxHashMap<WorkerKey, Slot>,
  free: BTreeSet<Slot>,
  /// Blocks (nodes) each slot holds.
  held: Vec<u64>,
  total_held: u64,
}

impl Slots {
  #[inline]
  pub fn get(&self, key: WorkerKey) -> Option<Slot> {
    self.ids.get(&key).copied()
  }

  /// The slot of `key`, taking the lowest free one for a new pair.
  pub fn intern(&mut self, key: WorkerKey) -> Slot {
    if let Some(&slot) = self.ids.get(&key) {
      return slot;
    }
    let slot = match self.free.pop_first() {
      Some(slot) => slot,
      None => {
        self.keys.push(None);
        self.held.push(0);
        (self.keys.len() - 1) as Slot
      }
    };
    self.keys[slot as usize] = Some(key);
    self.ids.insert(key, slot);
    slot
  }

  /// Forgets an empty slot; its number is reused.
  pub fn release(&mut self, slot: Slot) {
    debug_assert_eq!(self.held[slot as usize], 0);
    if let Some(key) = self.keys[slot as usize].take() {
      self.ids.remove(&key);
      self.free.insert(slot);
    }
  }

  #[inline]
  pub fn key(&self, slot: Slot) -> WorkerKey {
    self.keys[slot as usize].expect("slot in use")
  }

  /// Slots in use.
  pub fn len(&self) -> usize {
    self.ids.len()
  }

  /// One past the highest slot number ever used.
  #[cfg(test)]
  pub fn bound(&self) -> usize {
    self.keys.len()
  }

  pub fn iter(&self) -> impl Iterator<Item = (Slot, WorkerKey)> + '_ {
    self.keys.iter().enumerate().filter_map(|(s, k)| k.map(|k| (s as Slot, k)))
  }

  pub fn of_worker(&self, worker: u64) -> Vec<Slot> {
    self.iter().filter(|(_, k)| k.worker == worker).map(|(s, _)| s).collect()
  }

  #[inline]
  pub fn held(&self, slot: Slot) -> u64 {
    self.held[slot as usize]
  }

  /// (worker, dp_rank, block) pairs held, over all slots.
  #[inline]
  pub fn total_held(&self) -> u64 {
    self.total_held
  }

  #[inline]
  pub fn count_added(&mut self, slot: Slot) {
    self.held[slot as usize] += 1;
    self.total_held += 1;
  }

  #[inline]
  pub fn count_removed(&mut self, slot: Slot) {
    self.held[slot as usize] -= 1;
    self.total_held -= 1;
  }

  pub fn bytes(&self) -> usize {
    self.keys.capacity() * std::mem::size_of::<Option<WorkerKey>>()
      + self.held.capacity() * 8
      + super::tree::table_bytes(self.ids.capacity(), std::mem::size_of::<(WorkerKey, Slot)>())
      + self.free.len() * 8
  }
}

/// Holder sets of nodes.
impl Tree {
  #[cfg(test)]
  pub fn holds(&self, id: NodeId, slot: Slot) -> bool {
    let n = self.node(id);
    if slot < INLINE_SLOTS {
      n.workers & (1u64 << slot) != 0
    } else {
      n.children & SPILL_FLAG != 0 && self.spill.get(&id).is_some_and(|v| v.binary_search(&slot).is_ok())
    }
  }

  /// Adds `slot` to the holders of `id`; false when it already held it.
  pub fn add_holder(&mut self, id: NodeId, slot: Slot) -> bool {
    if slot < INLINE_SLOTS {
      let n = self.node_mut(id);
      let bit = 1u64 << slot;
      let added = n.workers & bit == 0;
      n.workers |= bit;
      return added;
    }
    let list = self.spill.entry(id).or_default();
    match list.binary_search(&slot) {
      Ok(_) => false,
      Err(at) => {
        list.insert(at, slot);
        self.node_mut(id).children |= SPILL_FLAG;
        true
      }
    }
  }

  /// Removes `slot` from the holders of `id`; false when it did not hold it. The caller then
  /// releases the node if it became unused.
  pub fn remove_holder(&mut self, id: NodeId, slot: Slot) -> bool {
    if slot < INLINE_SLOTS {
      let n = self.node_mut(id);
      let bit = 1u64 << slot;
      let removed = n.workers & bit != 0;
      n.workers &= !bit;
      return removed;
    }
    let Some(list) = self.spill.get_mut(&id) else { return false };
    let Ok(at) = list.binary_search(&slot) else { return false };
    list.remove(at);
    if list.is_empty() {
      self.spill.remove(&id);
      self.node_mut(id).children &= !SPILL_FLAG;
    }
    true
  }

  /// Appends the holders of `id` to `out`.
  pub fn holders_into(&self, id: NodeId, out: &mut Vec<Slot>) {
    let mut mask = self.node(id).workers;
    while mask != 0 {
      out.push(mask.trailing_zeros());
      mask &= mask - 1;
    }
    if self.node(id).children & SPILL_FLAG != 0 {
      if let Some(list) = self.spill.get(&id) {
        out.extend_from_slice(list);
      }
    }
  }

  /// The spilled holders of `id` (empty when none).
  #[inline]
  pub fn spilled(&self, id: NodeId) -> &[Slot] {
    if self.node(id).children & SPILL_FLAG == 0 {
      return &[];
    }
    self.spill.get(&id).map_or(&[], |v| v.as_slice())
  }
}

#[cfg(test)]
mod tests {
  use super::super::tree::ROOT;
  use super::*;

  fn key(worker: u64, dp_rank: u32) -> WorkerKey {
    WorkerKey { worker, dp_rank }
  }

  #[test]
  fn slots_reuse_the_lowest_free_number() {
    let mut s = Slots::default();
    assert_eq!(s.intern(key(7, 0)), 0);
    assert_eq!(s.intern(key(7, 1)), 1);
    assert_eq!(s.intern(key(9, 0)), 2);
    assert_eq!(s.intern(key(7, 1)), 1);
    s.release(0);
    s.release(1);
    assert_eq!(s.intern(key(3, 0)), 0);
    assert_eq!(s.of_worker(9), vec![2]);
    assert_eq!(s.len(), 2);
  }

  #[test]
  fn holders_inline_and_spilled() {
    let mut t = Tree::new();
    let n = t.insert_child(ROOT, 5).unwrap();
    assert!(t.add_holder(n, 3));
    assert!(!t.add_holder(n, 3));
    assert!(t.add_holder(n, 70));
    assert!(t.add_holder(n, 65));
    assert!(t.holds(n, 70) && t.holds(n, 3) && !t.holds(n, 66) && !t.holds(n, 4));
    let mut out = Vec::new();
    t.holders_into(n, &mut out);
    assert_eq!(out, vec![3, 65, 70]);
    assert_eq!(t.children(n), 0, "the spill flag is not a child");
    assert!(t.remove_holder(n, 65) && t.remove_holder(n, 70) && !t.remove_holder(n, 70));
    assert!(t.spilled(n).is_empty() && t.has_holders(n));
    assert!(t.remove_holder(n, 3));
    assert!(!t.has_holders(n));
    t.release_unused(n);
    t.check();
  }
}
