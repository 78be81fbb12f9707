//! The (worker, dp_rank) pairs. Each is interned as a small slot number (the lowest free one, so
//! that up to 64 pairs all fit an edge's inline holder mask), with its block count and its rank
//! in (worker, dp_rank) order (results come out sorted by it without a sort).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

pub use crate::load::WorkerKey;

pub type Slot = u32;
pub const INLINE_SLOTS: Slot = 64;

#[derive(Default, Clone)]
pub struct Slots {
  keys: Vec<Option<WorkerKey>>,
  ids: FxHashMap<WorkerKey, Slot>,
  free: BTreeSet<Slot>,
  /// Blocks each slot holds.
  held: Vec<u64>,
  total_held: u64,
  /// Rank of each slot in key order (stale while `order_dirty`), and the slots by rank.
  rank: Vec<u32>,
  by_rank: Vec<Slot>,
  /// Every slot in use is its own rank (pairs interned in key order, no slot free below them).
  slots_in_order: bool,
  order_dirty: bool,
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
    self.order_dirty = true;
    slot
  }

  /// Forgets an empty slot; its number is reused.
  pub fn release(&mut self, slot: Slot) {
    debug_assert_eq!(self.held[slot as usize], 0);
    if let Some(key) = self.keys[slot as usize].take() {
      self.ids.remove(&key);
      self.free.insert(slot);
      self.order_dirty = true;
    }
  }

  /// Brings the ranks up to date (after slots came or went).
  pub fn refresh_order(&mut self) {
    if !self.order_dirty {
      return;
    }
    self.by_rank.clear();
    self.by_rank.extend(self.keys.iter().enumerate().filter_map(|(s, k)| k.map(|_| s as Slot)));
    let keys = &self.keys;
    self.by_rank.sort_unstable_by_key(|&s| keys[s as usize]);
    self.rank.clear();
    self.rank.resize(self.keys.len(), u32::MAX);
    for (r, &s) in self.by_rank.iter().enumerate() {
      self.rank[s as usize] = r as u32;
    }
    self.slots_in_order = self.by_rank.iter().enumerate().all(|(r, &s)| r as Slot == s);
    self.order_dirty = false;
  }

  /// Rank of each slot in (worker, dp_rank) order (u32::MAX for free slots); call
  /// `refresh_order` first.
  pub fn ranks(&self) -> &[u32] {
    debug_assert!(!self.order_dirty);
    &self.rank
  }

  /// Whether each slot in use is its own rank (the usual case: workers listed in order); call
  /// `refresh_order` first.
  pub fn slots_in_order(&self) -> bool {
    debug_assert!(!self.order_dirty);
    self.slots_in_order
  }

  /// The slots in use, in (worker, dp_rank) order; call `refresh_order` first.
  pub fn by_rank(&self) -> &[Slot] {
    debug_assert!(!self.order_dirty);
    &self.by_rank
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
  pub fn count_added(&mut self, slot: Slot, n: u64) {
    self.held[slot as usize] += n;
    self.total_held += n;
  }

  #[inline]
  pub fn count_removed(&mut self, slot: Slot, n: u64) {
    self.held[slot as usize] -= n;
    self.total_held -= n;
  }

  pub fn bytes(&self) -> usize {
    self.keys.capacity() * std::mem::size_of::<Option<WorkerKey>>()
      + self.held.capacity() * 8
      + (self.rank.capacity() + self.by_rank.capacity()) * 4
      + super::tree::table_bytes(self.ids.capacity(), std::mem::size_of::<(WorkerKey, Slot)>())
      + self.free.len() * 8
  }
}

#[cfg(test)]
mod tests {
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
  fn ranks_follow_the_key_order() {
    let mut s = Slots::default();
    s.intern(key(9, 0));
    s.intern(key(2, 1));
    s.intern(key(2, 0));
    s.refresh_order();
    assert_eq!(s.ranks(), &[2, 1, 0]);
    assert_eq!(s.by_rank(), &[2, 1, 0]);
    s.release(1);
    s.intern(key(1, 0));
    s.refresh_order();
    assert_eq!(s.by_rank(), &[1, 2, 0]);
  }
}
