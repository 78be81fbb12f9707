//! The table that finds a node from its key (its path's chained hash): open addressing over 64-byte
//! groups (one cache line each) of 10 slots, a 16-bit tag and a u32 node id per slot. A lookup
//! reads one line, compares its 10 tags at once, and verifies the key in the node it found (the
//! node the walk reads anyway for its holder mask). Because the line a key lives in is known from
//! the key alone, the prefix walk can prefetch the lines of blocks ahead of the one it is
//! matching: that is what keeps a cold 512-block walk within microseconds.
//!
//! Overflow: a key whose home group is full goes to the next group; each group counts the keys
//! that passed it (`overflow`), so a lookup stops at the first group without the key whose count
//! is 0, and a removal just clears its slot and decrements the counts on its path (no
//! tombstones, no shifting). 6.4 bytes per slot; the table doubles past 7/8 full.
//!
//! Keys are `chain_key` outputs, already spread over all 64 bits: a key is its own hash (low
//! bits: the group, top 16 bits: the tag). Poorly spread keys would still be found, only slower.

use super::tree::{Node, NodeId};

const SLOTS: usize = 10;
const EMPTY: NodeId = u32::MAX;
/// Doubles when len > capacity x MAX_LOAD_NUM / MAX_LOAD_DEN.
const MAX_LOAD_NUM: usize = 7;
const MAX_LOAD_DEN: usize = 8;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Group {
  tags: [u16; SLOTS],
  ids: [NodeId; SLOTS],
  /// Keys stored past this group whose probe started at or before it.
  overflow: u32,
}

const EMPTY_GROUP: Group = Group { tags: [0; SLOTS], ids: [EMPTY; SLOTS], overflow: 0 };

#[inline(always)]
fn tag_of(hash: u64) -> u16 {
  (hash >> 48) as u16
}

impl Group {
  /// Bit 2j set when slot j's tag equals `tag` (the slot may be empty: check its id).
  #[inline(always)]
  fn matches(&self, tag: u16) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
      use std::arch::x86_64::*;
      // SAFETY: SSE2 is part of x86_64; both 16-byte loads stay inside `tags` (20 bytes).
      unsafe {
        let needle = _mm_set1_epi16(tag as i16);
        let p = self.tags.as_ptr() as *const u8;
        let low = _mm_loadu_si128(p as *const __m128i); // tags 0..8
        let high = _mm_loadu_si128(p.add(4) as *const __m128i); // tags 2..10
        let a = _mm_movemask_epi8(_mm_cmpeq_epi16(low, needle)) as u32;
        let b = _mm_movemask_epi8(_mm_cmpeq_epi16(high, needle)) as u32;
        (a | (b << 4)) & 0x5_5555
      }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
      let mut m = 0;
      for (j, &t) in self.tags.iter().enumerate() {
        m |= ((t == tag) as u32) << (2 * j);
      }
      m
    }
  }

  #[inline]
  fn free_slot(&self) -> Option<usize> {
    self.ids.iter().position(|&id| id == EMPTY)
  }
}

#[derive(Default)]
pub struct KeyTable {
  groups: Vec<Group>,
  len: usize,
}

impl KeyTable {
  #[cfg(test)]
  pub fn len(&self) -> usize {
    self.len
  }

  #[inline(always)]
  fn mask(&self) -> usize {
    self.groups.len().wrapping_sub(1)
  }

  /// The node whose key is `key`.
  #[inline(always)]
  pub fn find(&self, key: u64, nodes: &[Node]) -> Option<NodeId> {
    if self.groups.is_empty() {
      return None;
    }
    let hash = key;
    let tag = tag_of(hash);
    let mask = self.mask();
    let mut g = hash as usize & mask;
    for _ in 0..self.groups.len() {
      let group = &self.groups[g];
      let mut m = group.matches(tag);
      while m != 0 {
        let id = group.ids[(m.trailing_zeros() / 2) as usize];
        if id != EMPTY && nodes[id as usize].key == key {
          return Some(id);
        }
        m &= m - 1;
      }
      if group.overflow == 0 {
        return None;
      }
      g = (g + 1) & mask;
    }
    None
  }

  /// Asks the CPU to fetch the line `key` would be found in.
  #[inline(always)]
  pub fn prefetch(&self, key: u64) {
    if !self.groups.is_empty() {
      let g = key as usize & self.mask();
      prefetch(&self.groups[g]);
    }
  }

  /// The node `key` probably names, from its home line only and unverified: what to prefetch.
  #[inline(always)]
  pub fn peek(&self, key: u64) -> Option<NodeId> {
    let group = self.groups.get(key as usize & self.mask())?;
    let m = group.matches(tag_of(key));
    if m == 0 {
      return None;
    }
    Some(group.ids[(m.trailing_zeros() / 2) as usize]).filter(|&id| id != EMPTY)
  }

  /// Adds `key` -> `id`; the caller checked the key is absent. `nodes` gives the keys of the
  /// stored ids when the table grows.
  pub fn insert(&mut self, key: u64, id: NodeId, nodes: &[Node]) {
    if (self.len + 1) * MAX_LOAD_DEN > self.groups.len() * SLOTS * MAX_LOAD_NUM {
      self.resize((self.groups.len() * 2).max(1), nodes);
    }
    self.place(key, id);
    self.len += 1;
  }

  fn place(&mut self, key: u64, id: NodeId) {
    let hash = key;
    let mask = self.mask();
    let mut g = hash as usize & mask;
    loop {
      let group = &mut self.groups[g];
      if let Some(j) = group.free_slot() {
        group.tags[j] = tag_of(hash);
        group.ids[j] = id;
        return;
      }
      // The load limit leaves free slots, so the probe ends.
      group.overflow += 1;
      g = (g + 1) & mask;
    }
  }

  /// Removes the entry of node `id`, whose key is `key`.
  pub fn remove(&mut self, key: u64, id: NodeId) {
    if self.groups.is_empty() {
      return;
    }
    let hash = key;
    let mask = self.mask();
    let home = hash as usize & mask;
    let mut g = home;
    for _ in 0..self.groups.len() {
      if let Some(j) = self.groups[g].ids.iter().position(|&x| x == id) {
        self.groups[g].ids[j] = EMPTY;
        self.len -= 1;
        // Undo the overflow counts of the groups this key passed.
        let mut p = home;
        while p != g {
          self.groups[p].overflow -= 1;
          p = (p + 1) & mask;
        }
        return;
      }
      g = (g + 1) & mask;
    }
    debug_assert!(false, "removing a node the table does not hold");
  }

  /// Room for `additional` more keys without growing.
  pub fn reserve(&mut self, additional: usize, nodes: &[Node]) {
    let need = self.len + additional;
    let mut groups = self.groups.len().max(1);
    while need * MAX_LOAD_DEN > groups * SLOTS * MAX_LOAD_NUM {
      groups *= 2;
    }
    if groups != self.groups.len() {
      self.resize(groups, nodes);
    }
  }

  fn resize(&mut self, groups: usize, nodes: &[Node]) {
    let old = std::mem::replace(&mut self.groups, vec![EMPTY_GROUP; groups]);
    for group in &old {
      for &id in group.ids.iter().filter(|&&id| id != EMPTY) {
        self.place(nodes[id as usize].key, id);
      }
    }
  }

  pub fn bytes(&self) -> usize {
    self.groups.capacity() * std::mem::size_of::<Group>()
  }

  #[cfg(test)]
  pub fn check(&self, nodes: &[Node]) {
    let mut n = 0;
    let mask = self.mask();
    let mut passed = vec![0u32; self.groups.len()];
    for (g, group) in self.groups.iter().enumerate() {
      for (j, &id) in group.ids.iter().enumerate() {
        if id == EMPTY {
          continue;
        }
        n += 1;
        let hash = nodes[id as usize].key;
        assert_eq!(group.tags[j], tag_of(hash));
        let mut p = hash as usize & mask;
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

#[cfg(test)]
mod tests {
  use super::*;

  fn nodes_with_keys(keys: &[u64]) -> Vec<Node> {
    keys.iter().map(|&key| Node { key, workers: 0, parent: 0, children: 0 }).collect()
  }

  #[test]
  fn group_is_one_cache_line() {
    assert_eq!(std::mem::size_of::<Group>(), 64);
  }

  #[test]
  fn tags_match_per_slot() {
    let mut g = EMPTY_GROUP;
    g.tags[0] = 7;
    g.tags[3] = 7;
    g.tags[9] = 7;
    g.tags[5] = 8;
    assert_eq!(g.matches(7), (1 << 0) | (1 << 6) | (1 << 18));
    assert_eq!(g.matches(8), 1 << 10);
    assert_eq!(g.matches(9), 0);
  }

  #[test]
  fn insert_find_remove_with_overflow_and_growth() {
    let mut rng = fastrand::Rng::with_seed(3);
    // Small keys (poorly spread: they cluster) and random ones.
    let keys: Vec<u64> = (0..2000).map(|i| if i % 2 == 0 { i } else { rng.u64(..) }).collect();
    let nodes = nodes_with_keys(&keys);
    let mut t = KeyTable::default();
    assert_eq!(t.find(5, &nodes), None);
    for (id, &k) in keys.iter().enumerate() {
      t.insert(k, id as NodeId, &nodes);
    }
    t.check(&nodes);
    for (id, &k) in keys.iter().enumerate() {
      assert_eq!(t.find(k, &nodes), Some(id as NodeId));
    }
    assert_eq!(t.find(u64::MAX - 1, &nodes), None);
    for (id, &k) in keys.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
      t.remove(k, id as NodeId);
    }
    t.check(&nodes);
    for (id, &k) in keys.iter().enumerate() {
      assert_eq!(t.find(k, &nodes), (id % 3 == 0).then_some(id as NodeId));
    }
    assert_eq!(t.len(), keys.len().div_ceil(3));
  }

  #[test]
  fn a_full_home_group_overflows_to_the_next() {
    // Keys sharing a home group.
    let mut t = KeyTable::default();
    t.reserve(100, &[]);
    let mask = t.mask();
    let home = |k: u64| k as usize & mask;
    let same: Vec<u64> = (0u64..).filter(|&k| home(k) == home(0)).take(SLOTS + 3).collect();
    let nodes = nodes_with_keys(&same);
    for (id, &k) in same.iter().enumerate() {
      t.insert(k, id as NodeId, &nodes);
    }
    assert_eq!(t.groups[home(0)].overflow, 3);
    t.check(&nodes);
    t.remove(same[SLOTS + 1], (SLOTS + 1) as NodeId);
    assert_eq!(t.groups[home(0)].overflow, 2);
    assert_eq!(t.find(same[SLOTS + 2], &nodes), Some((SLOTS + 2) as NodeId));
    assert_eq!(t.find(same[SLOTS + 1], &nodes), None);
    assert_eq!(t.peek(same[0]), Some(0));
    // Same home line, another tag: nothing to prefetch.
    assert_eq!(t.peek(same[0] | 1 << 60), None);
    t.check(&nodes);
  }
}
