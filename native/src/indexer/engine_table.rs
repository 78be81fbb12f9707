//! One slot's engine keys: engine block hash -> block id, in open addressing over 64-byte groups
//! (one cache line each) of 5 entries. The line a key lives in is known from the key alone, so an
//! event's keys are all prefetched before any is looked at: the cache misses of an event's 32
//! lookups overlap instead of adding up (they are most of what storing and removing cost, the
//! tables being far larger than the caches).
//!
//! Overflow: a key whose home group is full goes to the next group; each group counts the keys
//! that passed it, so a lookup stops at the first group without the key whose count is 0, and a
//! removal just empties its entry and decrements the counts on its path (no tombstones).
//! 12.8 bytes per entry; the table doubles past 7/8 full.

use super::tree::{table_hash, BlockId};

const SLOTS: usize = 5;
const EMPTY: BlockId = u32::MAX;
/// An entry claimed for a key of the stored event being checked, its block not known yet
/// (`claim`, then `settle` or `remove`). Block ids stay below it (tree::MAX_BLOCKS).
const PENDING: BlockId = u32::MAX - 1;

/// What `claim` found for a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
  /// The key already names this block.
  Named(BlockId),
  /// The key was absent: an entry is claimed for it at this position (group * 5 + entry).
  Claimed(u32),
  /// The key was claimed earlier by the same event (a hash repeated within it).
  Repeated,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Group {
  lo: [u32; SLOTS],
  hi: [u32; SLOTS],
  block: [BlockId; SLOTS],
  /// Keys stored past this group whose probe started at or before it.
  overflow: u32,
}

const EMPTY_GROUP: Group = Group { lo: [0; SLOTS], hi: [0; SLOTS], block: [EMPTY; SLOTS], overflow: 0 };

impl Group {
  /// Bit j: entry j's low half is `lo` (compared without a branch per entry).
  #[inline(always)]
  fn lo_matches(&self, lo: u32) -> u32 {
    let mut m = 0;
    for j in 0..SLOTS {
      m |= ((self.lo[j] == lo) as u32) << j;
    }
    m
  }

  /// The entry holding `key` (halves `lo`, `hi`).
  #[inline(always)]
  fn find(&self, lo: u32, hi: u32) -> Option<usize> {
    let mut m = self.lo_matches(lo);
    while m != 0 {
      let j = m.trailing_zeros() as usize;
      if self.hi[j] == hi && self.block[j] != EMPTY {
        return Some(j);
      }
      m &= m - 1;
    }
    None
  }

  /// The first empty entry.
  #[inline(always)]
  fn vacancy(&self) -> Option<usize> {
    let mut m = 0u32;
    for j in 0..SLOTS {
      m |= ((self.block[j] == EMPTY) as u32) << j;
    }
    (m != 0).then(|| m.trailing_zeros() as usize)
  }
}

#[derive(Default, Clone)]
pub struct EngineTable {
  groups: Vec<Group>,
  len: usize,
}

impl EngineTable {
  pub fn len(&self) -> usize {
    self.len
  }

  /// The group a key's probe starts at: from the hash's top bits, so doubling the table sends
  /// group g's keys to groups 2g and 2g + 1 and a resize writes the new table front to back.
  #[inline(always)]
  fn home(&self, key: u64) -> usize {
    (((table_hash(key) >> 32) * self.groups.len() as u64) >> 32) as usize
  }

  /// Asks the CPU to fetch the line `key` would be in.
  #[inline(always)]
  pub fn prefetch(&self, key: u64) {
    if !self.groups.is_empty() {
      super::tree::prefetch(&self.groups[self.home(key)]);
    }
  }

  /// (group, entry) of `key`.
  #[inline]
  fn position(&self, key: u64) -> Option<(usize, usize)> {
    if self.groups.is_empty() {
      return None;
    }
    let (lo, hi) = (key as u32, (key >> 32) as u32);
    let mask = self.groups.len() - 1;
    let mut g = self.home(key);
    for _ in 0..self.groups.len() {
      let group = &self.groups[g];
      if let Some(j) = group.find(lo, hi) {
        return Some((g, j));
      }
      if group.overflow == 0 {
        return None;
      }
      g = (g + 1) & mask;
    }
    None
  }

  #[inline]
  pub fn get(&self, key: u64) -> Option<BlockId> {
    self.position(key).map(|(g, j)| self.groups[g].block[j])
  }

  /// Adds `key` -> `block`; the caller checked the key is absent.
  pub fn insert(&mut self, key: u64, block: BlockId) {
    debug_assert!(block != EMPTY && self.get(key).is_none());
    if (self.len + 1) * 8 > self.groups.len() * SLOTS * 7 {
      self.resize((self.groups.len() * 2).max(1));
    }
    self.place(key, block);
    self.len += 1;
  }

  /// Finds `key` or claims an entry for it, in one probe while its line is hot (a stored event's
  /// lookups and inserts were two probes apart, the tree's work between them). A claimed entry
  /// is settled with its block (`settle`) or given back (`remove`) before anything else reads
  /// the table. The caller reserved room (`reserve`): no claim grows the table, so positions hold.
  /// One walk from the key's home both looks for it and notes the first vacancy, where the key
  /// goes when absent (where `place` would put it: the first vacancy from home).
  #[inline(always)]
  pub fn claim(&mut self, key: u64) -> Claim {
    debug_assert!((self.len + 1) * 8 <= self.groups.len() * SLOTS * 7, "claim without reserve");
    let (lo, hi) = (key as u32, (key >> 32) as u32);
    let mask = self.groups.len() - 1;
    let home = self.home(key);
    let mut g = home;
    let mut vacant = None;
    for _ in 0..self.groups.len() {
      let group = &self.groups[g];
      if let Some(j) = group.find(lo, hi) {
        return match group.block[j] {
          PENDING => Claim::Repeated,
          block => Claim::Named(block),
        };
      }
      if vacant.is_none() {
        vacant = group.vacancy().map(|j| (g, j));
      }
      if group.overflow == 0 {
        break;
      }
      g = (g + 1) & mask;
    }
    let (at, j) = match vacant {
      Some(v) => v,
      // Every group walked was full: the vacancy is further on (the load limit leaves some).
      None => loop {
        g = (g + 1) & mask;
        if let Some(j) = self.groups[g].vacancy() {
          break (g, j);
        }
      },
    };
    let mut p = home;
    while p != at {
      self.groups[p].overflow += 1;
      p = (p + 1) & mask;
    }
    let group = &mut self.groups[at];
    group.lo[j] = lo;
    group.hi[j] = hi;
    group.block[j] = PENDING;
    self.len += 1;
    Claim::Claimed((at * SLOTS + j) as u32)
  }

  /// Gives the entry `claim` claimed at `pos` its block.
  #[inline]
  pub fn settle(&mut self, pos: u32, block: BlockId) {
    let slot = &mut self.groups[pos as usize / SLOTS].block[pos as usize % SLOTS];
    debug_assert_eq!(*slot, PENDING);
    *slot = block;
  }

  /// Places `key` -> `block` in the first vacancy from its home; returns its position.
  fn place(&mut self, key: u64, block: BlockId) -> usize {
    let mask = self.groups.len() - 1;
    let mut g = self.home(key);
    loop {
      let group = &mut self.groups[g];
      if let Some(j) = group.vacancy() {
        group.lo[j] = key as u32;
        group.hi[j] = (key >> 32) as u32;
        group.block[j] = block;
        return g * SLOTS + j;
      }
      // The load limit leaves free entries, so the probe ends.
      group.overflow += 1;
      g = (g + 1) & mask;
    }
  }

  /// Removes `key`; returns the block it named.
  pub fn remove(&mut self, key: u64) -> Option<BlockId> {
    let (g, j) = self.position(key)?;
    let block = std::mem::replace(&mut self.groups[g].block[j], EMPTY);
    self.len -= 1;
    let mask = self.groups.len() - 1;
    let mut p = self.home(key);
    while p != g {
      self.groups[p].overflow -= 1;
      p = (p + 1) & mask;
    }
    Some(block)
  }

  /// Room for `additional` more keys without growing.
  pub fn reserve(&mut self, additional: usize) {
    let need = self.len + additional;
    let mut groups = self.groups.len().max(1);
    while need * 8 > groups * SLOTS * 7 {
      groups *= 2;
    }
    if groups != self.groups.len() {
      self.resize(groups);
    }
  }

  /// Rebuilds the table with `groups` groups. The new table only fills, so each group's next
  /// vacancy is its count of entries (a byte per group), not a compare of its entries; with
  /// top-bit homes the writes go front to back.
  fn resize(&mut self, groups: usize) {
    let old = std::mem::replace(&mut self.groups, vec![EMPTY_GROUP; groups]);
    let mut fill = vec![0u8; groups];
    let mask = groups - 1;
    for group in &old {
      for j in 0..SLOTS {
        let block = group.block[j];
        if block == EMPTY {
          continue;
        }
        debug_assert!(block != PENDING, "resized with a claim open");
        let key = (group.hi[j] as u64) << 32 | group.lo[j] as u64;
        let mut g = self.home(key);
        // The load limit leaves free entries, so the probe ends.
        while fill[g] as usize == SLOTS {
          self.groups[g].overflow += 1;
          g = (g + 1) & mask;
        }
        let (to, at) = (&mut self.groups[g], fill[g] as usize);
        to.lo[at] = group.lo[j];
        to.hi[at] = group.hi[j];
        to.block[at] = block;
        fill[g] += 1;
      }
    }
  }

  pub fn iter(&self) -> impl Iterator<Item = (u64, BlockId)> + '_ {
    self.groups.iter().flat_map(|g| (0..SLOTS).filter(move |&j| g.block[j] != EMPTY).map(move |j| ((g.hi[j] as u64) << 32 | g.lo[j] as u64, g.block[j])))
  }

  /// Keeps the keys whose block passes `keep` (rebuilds the table: eviction only).
  pub fn retain(&mut self, mut keep: impl FnMut(BlockId) -> bool) {
    let kept: Vec<(u64, BlockId)> = self.iter().filter(|&(_, b)| keep(b)).collect();
    if kept.len() == self.len {
      return;
    }
    self.groups.iter_mut().for_each(|g| *g = EMPTY_GROUP);
    self.len = 0;
    for (k, b) in kept {
      self.place(k, b);
      self.len += 1;
    }
  }

  pub fn bytes(&self) -> usize {
    self.groups.capacity() * std::mem::size_of::<Group>()
  }

  #[cfg(test)]
  pub fn check(&self) {
    let mask = self.groups.len().wrapping_sub(1);
    let mut passed = vec![0u32; self.groups.len()];
    let mut n = 0;
    for (g, group) in self.groups.iter().enumerate() {
      for j in 0..SLOTS {
        if group.block[j] == EMPTY {
          continue;
        }
        n += 1;
        let key = (group.hi[j] as u64) << 32 | group.lo[j] as u64;
        let mut p = self.home(key);
        while p != g {
          passed[p] += 1;
          p = (p + 1) & mask;
        }
      }
    }
    assert_eq!(n, self.len);
    for (g, group) in self.groups.iter().enumerate() {
      assert_eq!(group.overflow, passed[g], "overflow count of group {g}");
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn group_is_one_cache_line() {
    assert_eq!(std::mem::size_of::<Group>(), 64);
  }

  #[test]
  fn insert_get_remove_with_overflow_growth_and_retain() {
    let mut rng = fastrand::Rng::with_seed(3);
    // Small keys and random ones; keys differing only in their high half.
    let keys: Vec<u64> = (0..3000u64)
      .map(|i| match i % 3 {
        0 => i,
        1 => rng.u64(..),
        _ => i << 32,
      })
      .collect();
    let mut t = EngineTable::default();
    assert_eq!(t.get(5), None);
    assert_eq!(t.remove(5), None);
    for (i, &k) in keys.iter().enumerate() {
      t.insert(k, i as BlockId);
    }
    t.check();
    for (i, &k) in keys.iter().enumerate() {
      assert_eq!(t.get(k), Some(i as BlockId));
    }
    for (i, &k) in keys.iter().enumerate().filter(|(i, _)| i % 4 != 0) {
      assert_eq!(t.remove(k), Some(i as BlockId));
    }
    t.check();
    for (i, &k) in keys.iter().enumerate() {
      assert_eq!(t.get(k), (i % 4 == 0).then_some(i as BlockId));
    }
    assert_eq!(t.len(), keys.len().div_ceil(4));
    t.retain(|b| b % 8 == 0);
    t.check();
    assert_eq!(t.len(), keys.len().div_ceil(8));
    assert_eq!(t.iter().count(), t.len());
    t.reserve(10_000);
    t.check();
    assert_eq!(t.get(keys[8]), Some(8));
  }

  #[test]
  fn claims_find_claim_repeat_settle_and_give_back() {
    let mut t = EngineTable::default();
    t.reserve(40);
    t.insert(7, 70);
    assert_eq!(t.claim(7), Claim::Named(70));
    let Claim::Claimed(a) = t.claim(8) else { panic!("8 is absent") };
    assert_eq!(t.claim(8), Claim::Repeated);
    let Claim::Claimed(b) = t.claim(9) else { panic!("9 is absent") };
    assert_eq!(t.len(), 3);
    t.settle(a, 80);
    assert_eq!(t.get(8), Some(80));
    assert_eq!(t.remove(9), Some(PENDING));
    assert_eq!(t.get(9), None);
    assert_eq!(t.len(), 2);
    let _ = b;
    // Claims that overflow their home group, given back, leave the counts as they were.
    let home0 = t.home(0);
    let same: Vec<u64> = (100u64..).filter(|&k| t.home(k) == home0).take(SLOTS + 2).collect();
    let claims: Vec<Claim> = same.iter().map(|&k| t.claim(k)).collect();
    assert!(claims.iter().all(|c| matches!(c, Claim::Claimed(_))));
    for &k in &same {
      t.remove(k);
    }
    t.check();
    assert_eq!(t.len(), 2);
  }

  #[test]
  fn a_full_home_group_overflows_to_the_next() {
    let mut t = EngineTable::default();
    t.reserve(100);
    let home0 = t.home(0);
    let same: Vec<u64> = (0u64..).filter(|&k| t.home(k) == home0).take(SLOTS + 3).collect();
    for (i, &k) in same.iter().enumerate() {
      t.insert(k, i as BlockId);
    }
    assert_eq!(t.groups[home0].overflow, 3);
    assert_eq!(t.remove(same[SLOTS + 1]), Some((SLOTS + 1) as BlockId));
    assert_eq!(t.groups[home0].overflow, 2);
    assert_eq!(t.get(same[SLOTS + 2]), Some((SLOTS + 2) as BlockId));
    t.check();
  }
}
