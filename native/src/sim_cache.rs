//! The simulated engine's paged KV cache (src/sim/engine/kv-cache.ts wraps it): a fixed pool of
//! blocks with reference counts, a complete block registered under its content hash (prefix
//! caching), registered blocks nobody references kept in an LRU and evicted only when no
//! never-registered free block is left. A trace replay does millions of these block operations
//! per policy over caches of megabytes, four engines interleaving: their cost is cache misses,
//! so the state is compact (a 16-byte record per block, 8-byte hash-index slots, the LRU an array
//! read front to back) and every run of independent accesses (a run of evictions, a step's newly
//! filled blocks, a prefix lookup) is prefetched a few blocks ahead. The caller passes whole runs
//! (typed arrays), so the per-block loops never cross into JavaScript.
//!
//! Invariants: a hash names at most one block; a block is referenced (refs > 0), or registered
//! with refs 0 and in the LRU, or unregistered with refs 0 and on the free stack.

use crate::sim_pages::Pages;

/// How many blocks ahead a run's loads are prefetched.
const AHEAD: usize = 8;
const NONE: u32 = u32::MAX;
const REGISTERED: u32 = 1 << 31;

#[derive(Clone, Copy)]
struct Block {
  /// Valid while registered (the hash index reads it to confirm a slot's key).
  hash: u64,
  /// The reference count in the low 31 bits, REGISTERED in the top one.
  refs: u32,
  /// The block's index in the LRU's entries while it is queued, NONE otherwise.
  lru_at: u32,
}

impl Block {
  fn refs(self) -> u32 {
    self.refs & !REGISTERED
  }
  fn registered(self) -> bool {
    self.refs & REGISTERED != 0
  }
}

#[inline(always)]
fn prefetch<T>(p: *const T) {
  #[cfg(target_arch = "x86_64")]
  // SAFETY: a prefetch is a hint: it never faults, whatever the address.
  unsafe {
    core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
  };
  #[cfg(not(target_arch = "x86_64"))]
  let _ = p;
}

/// What went wrong: the caller's bookkeeping, never a state the cache gets into by itself.
#[derive(Debug, PartialEq, Eq)]
pub enum CacheError {
  /// A block id out of range, or more blocks asked for than are available (RangeError).
  Range(String),
  /// A release or registration that contradicts the block's state (Error).
  State(String),
}

pub struct SimKvCache {
  blocks: Pages<Block>,
  /// Open addressing: a slot holds a hash's low half << 32 | (block + 1), 0 when empty; the high
  /// half is confirmed in the block's record, which a hit reads anyway.
  slots: Pages<u64>,
  mask: usize,
  cached: u32,
  /// Registered blocks with refs 0, oldest first; a removed block's entry is blanked (NONE).
  lru: Pages<u32>,
  lru_head: usize,
  lru_tail: usize,
  lru_count: u32,
  /// Unregistered free blocks; block 0 is handed out first.
  free: Vec<u32>,
  used: u32,
  evicted: f64,
}

impl SimKvCache {
  pub fn new(total: u32) -> Self {
    let n = (2 * total as usize).max(16).next_power_of_two();
    Self {
      blocks: Pages::new(total as usize, Block { hash: 0, refs: 0, lru_at: NONE }),
      slots: Pages::new(n, 0),
      mask: n - 1,
      cached: 0,
      lru: Pages::new((2 * total as usize).max(2), NONE),
      lru_head: 0,
      lru_tail: 0,
      lru_count: 0,
      free: (0..total).rev().collect(),
      used: 0,
      evicted: 0.0,
    }
  }

  /// Bytes the cache holds outside the JavaScript heap.
  pub fn bytes(&self) -> usize {
    self.blocks.allocated() + self.slots.allocated() + self.lru.allocated() + self.free.capacity() * 4
  }

  pub fn total(&self) -> u32 {
    self.blocks.len() as u32
  }
  /// Blocks with at least one reference.
  pub fn used(&self) -> u32 {
    self.used
  }
  /// Blocks an allocation can take: free, or cached and unreferenced.
  pub fn available(&self) -> u32 {
    self.free.len() as u32 + self.lru_count
  }
  /// Registered blocks.
  pub fn cached(&self) -> u32 {
    self.cached
  }
  pub fn evictions(&self) -> f64 {
    self.evicted
  }

  fn check(&self, block: u32) -> Result<usize, CacheError> {
    if (block as usize) < self.blocks.len() {
      Ok(block as usize)
    } else {
      Err(CacheError::Range(format!("KV block {block} is not one of this cache's {} blocks", self.blocks.len())))
    }
  }

  pub fn ref_count(&self, block: u32) -> Result<u32, CacheError> {
    Ok(self.blocks[self.check(block)?].refs())
  }

  pub fn is_registered(&self, block: u32) -> Result<bool, CacheError> {
    Ok(self.blocks[self.check(block)?].registered())
  }

  fn home(&self, hash: u64) -> usize {
    (hash as u32 as usize) & self.mask
  }

  /// The slot holding `hash`, or the empty slot ending its probe sequence.
  fn slot_of(&self, hash: u64) -> usize {
    let lo = hash & 0xffff_ffff;
    let mut i = self.home(hash);
    loop {
      let s = self.slots[i];
      if s == 0 || (s >> 32 == lo && self.blocks[(s as u32 - 1) as usize].hash == hash) {
        return i;
      }
      i = (i + 1) & self.mask;
    }
  }

  /// The block registered under `hash`, or None.
  pub fn lookup(&self, hash: u64) -> Option<u32> {
    match self.slots[self.slot_of(hash)] {
      0 => None,
      s => Some(s as u32 - 1),
    }
  }

  /// Deletes the slot of `block`, registered under `hash` (backward shift: no tombstones).
  fn unindex(&mut self, hash: u64, block: u32) {
    let want = ((hash & 0xffff_ffff) << 32) | (u64::from(block) + 1);
    let mask = self.mask;
    let mut i = self.home(hash);
    while self.slots[i] != want {
      debug_assert!(self.slots[i] != 0, "a registered block is in the index");
      i = (i + 1) & mask;
    }
    let mut j = (i + 1) & mask;
    while self.slots[j] != 0 {
      let home = ((self.slots[j] >> 32) as usize) & mask;
      // The entry at j may move into the hole unless its home lies cyclically in (i, j].
      let stays = if i <= j { home > i && home <= j } else { home > i || home <= j };
      if !stays {
        self.slots[i] = self.slots[j];
        i = j;
      }
      j = (j + 1) & mask;
    }
    self.slots[i] = 0;
    self.cached -= 1;
  }

  fn lru_push(&mut self, block: u32) {
    if self.lru_tail == self.lru.len() {
      self.lru_compact();
    }
    self.lru[self.lru_tail] = block;
    self.blocks[block as usize].lru_at = self.lru_tail as u32;
    self.lru_tail += 1;
    self.lru_count += 1;
  }

  fn lru_remove(&mut self, block: u32) {
    let at = self.blocks[block as usize].lru_at;
    if at != NONE {
      self.lru[at as usize] = NONE;
      self.blocks[block as usize].lru_at = NONE;
      self.lru_count -= 1;
    }
  }

  /// The oldest queued block, taken out of the queue's entries (the caller clears its `lru_at`).
  fn lru_shift(&mut self) -> Option<u32> {
    if self.lru_count == 0 {
      return None;
    }
    let mut at = self.lru_head;
    while self.lru[at] == NONE {
      at += 1;
    }
    self.lru_head = at + 1;
    self.lru_count -= 1;
    Some(self.lru[at])
  }

  fn lru_compact(&mut self) {
    let mut to = 0;
    for at in self.lru_head..self.lru_tail {
      let block = self.lru[at];
      if block != NONE {
        self.lru[to] = block;
        self.blocks[block as usize].lru_at = to as u32;
        to += 1;
      }
    }
    self.lru[to..self.lru_tail].fill(NONE);
    self.lru_head = 0;
    self.lru_tail = to;
  }

  /// Takes a reference on a block (a prefix hit takes a cached block out of the LRU).
  pub fn acquire(&mut self, block: u32) -> Result<(), CacheError> {
    let b = self.check(block)?;
    if self.blocks[b].refs() == 0 {
      self.used += 1;
      self.lru_remove(block);
    }
    self.blocks[b].refs += 1;
    Ok(())
  }

  /// Drops a reference; an unreferenced block stays cached (the LRU's newest) when registered.
  pub fn release(&mut self, block: u32) -> Result<(), CacheError> {
    let b = self.check(block)?;
    let rec = self.blocks[b];
    if rec.refs() == 0 {
      return Err(CacheError::State(format!("KV block {block} released more often than acquired")));
    }
    self.blocks[b].refs -= 1;
    if rec.refs() == 1 {
      self.used -= 1;
      if rec.registered() {
        self.lru_push(block);
      } else {
        self.free.push(block);
      }
    }
    Ok(())
  }

  /// Writes `count` fresh blocks into `out` (never-registered ones first, then the LRU's oldest,
  /// evicted), the hashes of the evicted ones into `removed` in order when it is given; returns
  /// how many were evicted (a suffix of `out`). Nothing changes when fewer are available.
  pub fn allocate(&mut self, out: &mut [u32], mut removed: Option<&mut [u64]>) -> Result<usize, CacheError> {
    let count = out.len();
    if count > self.available() as usize {
      return Err(CacheError::Range(format!("{count} KV blocks asked for, {} available", self.available())));
    }
    let mut n = 0;
    while n < count {
      let Some(block) = self.free.pop() else { break };
      self.blocks[block as usize].refs = 1;
      out[n] = block;
      n += 1;
    }
    let first = n;
    // The evicted blocks from the LRU's entries (read in order), their records prefetched.
    for slot in &mut out[first..] {
      let block = self.lru_shift().expect("availability was checked");
      prefetch(&self.blocks[block as usize]);
      *slot = block;
    }
    // Their records read (each one's index slot prefetched), then their slots deleted a few
    // blocks behind, so the misses of a run overlap.
    let evicted = count - first;
    for k in 0..evicted + AHEAD {
      if k < evicted {
        let rec = &mut self.blocks[out[first + k] as usize];
        rec.refs = 1;
        rec.lru_at = NONE;
        prefetch(&self.slots[(rec.hash as u32 as usize) & self.mask]);
      }
      if k >= AHEAD {
        let block = out[first + k - AHEAD];
        let hash = self.blocks[block as usize].hash;
        self.unindex(hash, block);
        if let Some(r) = removed.as_deref_mut() {
          r[k - AHEAD] = hash;
        }
      }
    }
    self.evicted += evicted as f64;
    self.used += count as u32;
    Ok(evicted)
  }

  /// The block cached under `hash` if there is one (nothing changes); otherwise registers
  /// `block` (referenced, unregistered) under it and returns None.
  pub fn register_unless_cached(&mut self, block: u32, hash: u64) -> Result<Option<u32>, CacheError> {
    let b = self.check(block)?;
    let at = self.slot_of(hash);
    let s = self.slots[at];
    if s != 0 {
      return Ok(Some(s as u32 - 1));
    }
    let rec = self.blocks[b];
    if rec.registered() || rec.refs() == 0 {
      let why = if rec.refs() == 0 { "not referenced" } else { "registered already" };
      return Err(CacheError::State(format!("KV block {block} cannot be registered under {hash}: {why}")));
    }
    self.slots[at] = ((hash & 0xffff_ffff) << 32) | (u64::from(block) + 1);
    self.blocks[b].hash = hash;
    self.blocks[b].refs |= REGISTERED;
    self.cached += 1;
    Ok(None)
  }

  /// Offers a table's newly complete blocks `table[first..hashes.len()]`, under `hashes`, to the
  /// prefix cache: a block whose hash is cached already is swapped in `table` for the cached copy
  /// (its own block released), any other is registered. `fresh[i - first]` says which; returns
  /// how many were registered.
  pub fn commit(&mut self, table: &mut [u32], hashes: &[u64], first: usize, fresh: &mut [u8]) -> Result<usize, CacheError> {
    let end = hashes.len();
    for k in first..end.min(first + AHEAD) {
      self.prefetch_commit(table[k], hashes[k]);
    }
    let mut registered = 0;
    for i in first..end {
      if i + AHEAD < end {
        self.prefetch_commit(table[i + AHEAD], hashes[i + AHEAD]);
      }
      let own = table[i];
      match self.register_unless_cached(own, hashes[i])? {
        None => {
          fresh[i - first] = 1;
          registered += 1;
        }
        Some(existing) => {
          fresh[i - first] = 0;
          if existing != own {
            self.acquire(existing)?;
            self.release(own)?;
            table[i] = existing;
          }
        }
      }
    }
    Ok(registered)
  }

  fn prefetch_commit(&self, block: u32, hash: u64) {
    prefetch(&self.slots[self.home(hash)]);
    if let Some(rec) = self.blocks.get(block as usize) {
      prefetch(rec);
    }
  }

  /// The longest run of leading `hashes` that is cached, its blocks into `out`: (the run's
  /// length, how many of its blocks are unreferenced: taken out of the evictable pool by an
  /// admission).
  pub fn match_prefix(&self, hashes: &[u64], out: &mut [u32]) -> (usize, usize) {
    let n = hashes.len().min(out.len());
    for h in &hashes[..n.min(AHEAD)] {
      prefetch(&self.slots[self.home(*h)]);
    }
    let mut evictable = 0;
    for i in 0..n {
      if i + AHEAD < n {
        prefetch(&self.slots[self.home(hashes[i + AHEAD])]);
      }
      let Some(block) = self.lookup(hashes[i]) else { return (i, evictable) };
      if self.blocks[block as usize].refs() == 0 {
        evictable += 1;
      }
      out[i] = block;
    }
    (n, evictable)
  }

  /// Forgets every hash (vLLM's reset_prefix_cache): cached free blocks become plain free blocks.
  pub fn clear(&mut self) {
    for rec in self.blocks.iter_mut() {
      rec.refs &= !REGISTERED;
    }
    self.slots.fill(0);
    self.cached = 0;
    while let Some(block) = self.lru_shift() {
      self.blocks[block as usize].lru_at = NONE;
      self.free.push(block);
    }
    self.lru_head = 0;
    self.lru_tail = 0;
  }

  /// The registered hashes, in block order.
  pub fn cached_hashes(&self) -> Vec<u64> {
    self.blocks.iter().filter(|b| b.registered()).map(|b| b.hash).collect()
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn alloc(c: &mut SimKvCache, n: usize) -> (Vec<u32>, Vec<u64>) {
    let mut out = vec![0; n];
    let mut removed = vec![0; n];
    let evicted = c.allocate(&mut out, Some(&mut removed)).unwrap();
    removed.truncate(evicted);
    (out, removed)
  }

  #[test]
  fn evicts_least_recently_released_after_the_free_blocks() {
    let mut c = SimKvCache::new(4);
    let (blocks, removed) = alloc(&mut c, 4);
    assert_eq!(blocks, [0, 1, 2, 3]);
    assert!(removed.is_empty());
    for (i, b) in blocks.iter().enumerate() {
      assert_eq!(c.register_unless_cached(*b, 100 + i as u64), Ok(None));
    }
    for i in [2, 0, 3, 1] {
      c.release(blocks[i]).unwrap();
    }
    assert_eq!((c.available(), c.used(), c.cached()), (4, 0, 4));
    let (_, removed) = alloc(&mut c, 2);
    assert_eq!(removed, [102, 100]);
    assert_eq!((c.lookup(102), c.lookup(103)), (None, Some(3)));
    assert_eq!(c.evictions(), 2.0);
    assert!(matches!(c.allocate(&mut [0; 3], None), Err(CacheError::Range(_))));
  }

  #[test]
  fn commit_swaps_duplicates_for_the_cached_copy() {
    let mut c = SimKvCache::new(8);
    let (mut a, _) = alloc(&mut c, 3);
    let mut fresh = [0u8; 3];
    assert_eq!(c.commit(&mut a, &[7, 8, 9], 0, &mut fresh), Ok(3));
    let (mut b, _) = alloc(&mut c, 3);
    let own = b.clone();
    assert_eq!(c.commit(&mut b, &[7, 8, 10], 0, &mut fresh), Ok(1));
    assert_eq!(fresh, [0, 0, 1]);
    assert_eq!(&b[..2], &a[..2]);
    assert_eq!(b[2], own[2]);
    assert_eq!(c.ref_count(a[0]), Ok(2));
    assert_eq!(c.ref_count(own[0]), Ok(0));
    // The swapped-out blocks are plain free blocks, handed out before any eviction.
    assert_eq!(c.available(), 4);
    let mut out = [0u32; 4];
    let (n, evictable) = c.match_prefix(&[7, 8, 9, 11], &mut out);
    assert_eq!((n, evictable, &out[..3]), (3, 0, &a[..]));
  }

  #[test]
  fn bookkeeping_errors_change_nothing() {
    let mut c = SimKvCache::new(2);
    let (ab, _) = alloc(&mut c, 2);
    c.register_unless_cached(ab[0], 9).unwrap();
    assert!(matches!(c.register_unless_cached(ab[0], 10), Err(CacheError::State(_))));
    c.release(ab[1]).unwrap();
    assert!(matches!(c.release(ab[1]), Err(CacheError::State(_))));
    assert!(matches!(c.acquire(5), Err(CacheError::Range(_))));
    assert_eq!((c.available(), c.used(), c.ref_count(ab[1])), (1, 1, Ok(0)));
  }

  #[test]
  fn index_survives_collisions_and_deletions() {
    // Hashes sharing their low half probe the same slots; deleting any keeps the rest findable.
    let mut c = SimKvCache::new(64);
    let (blocks, _) = alloc(&mut c, 64);
    let hash = |i: u64| (i << 32) | (i % 3);
    for (i, b) in blocks.iter().enumerate() {
      c.register_unless_cached(*b, hash(i as u64)).unwrap();
    }
    for b in blocks.iter().step_by(2) {
      c.release(*b).unwrap();
    }
    let (_, removed) = alloc(&mut c, 32);
    assert_eq!(removed.len(), 32);
    for (i, b) in blocks.iter().enumerate() {
      assert_eq!(c.lookup(hash(i as u64)), if i % 2 == 0 { None } else { Some(*b) }, "hash {i}");
    }
    c.clear();
    assert_eq!((c.cached(), c.cached_hashes().len(), c.lookup(hash(1))), (0, 0, None));
  }

  #[test]
  fn lru_compaction_keeps_the_order() {
    let mut c = SimKvCache::new(3);
    let (blocks, _) = alloc(&mut c, 3);
    for (i, b) in blocks.iter().enumerate() {
      c.register_unless_cached(*b, i as u64 + 1).unwrap();
    }
    // Churn the LRU far past its entries' length: acquire and release the same blocks.
    for _ in 0..20 {
      for b in &blocks {
        c.release(*b).unwrap();
      }
      for b in &blocks {
        c.acquire(*b).unwrap();
      }
    }
    for b in [1, 2, 0] {
      c.release(blocks[b]).unwrap();
    }
    let (_, removed) = alloc(&mut c, 3);
    assert_eq!(removed, [2, 3, 1]);
  }
}
