//! The lower tiers of one pool's workers: which blocks each (worker, dp_rank) holds on host
//! memory, disk or an external pool, fed by the same KV events as the device index (routed by
//! their medium). Blocks are identified by the router's sequence hash (the chain of local hashes
//! from block 0), so a tier can hold the middle of a prefix whose head lives on another tier:
//! offloading moves a sequence's tail first.

use rustc_hash::FxHashMap;

use super::medium::{LowerTier, LOWER_TIERS};
use crate::hash::chain_hash;
use crate::indexer::RejectReason;
use crate::load::WorkerKey;

/// What one engine hash of a worker names: the block's sequence hash and the tiers it is on.
#[derive(Clone, Copy, Debug)]
struct Named {
  seq: u64,
  tiers: u8,
}

#[derive(Clone, Default)]
struct WorkerTiers {
  by_engine: FxHashMap<u64, Named>,
  /// Per sequence hash, how many engine hashes name it on each tier (an entry has one above 0).
  by_seq: FxHashMap<u64, [u32; LOWER_TIERS]>,
}

/// Lower-tier blocks a prompt could reload on one worker, beyond its device prefix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierExtension {
  /// Blocks credited at each tier's rate (`LowerTier as usize`), each block once, at its best tier.
  pub blocks: [u32; LOWER_TIERS],
}

impl TierExtension {
  pub fn total(&self) -> u32 {
    self.blocks.iter().sum()
  }

  /// The extension without its first `skip` blocks (covered some other way), taken from the
  /// nearest tier first.
  pub fn beyond(mut self, mut skip: u32) -> TierExtension {
    for b in &mut self.blocks {
      let take = skip.min(*b);
      *b -= take;
      skip -= take;
    }
    self
  }
}

#[derive(Clone, Default)]
pub struct LowerTierIndex {
  workers: FxHashMap<WorkerKey, WorkerTiers>,
  /// Distinct (worker, block) pairs held per tier.
  held: [u64; LOWER_TIERS],
  seqs: Vec<u64>,
}

impl LowerTierIndex {
  /// (worker, block) pairs held on each tier.
  pub fn held(&self) -> [u64; LOWER_TIERS] {
    self.held
  }

  pub fn is_empty(&self) -> bool {
    self.workers.is_empty()
  }

  /// The sequence hash an engine hash of `key` names on any lower tier.
  pub fn sequence_hash_of(&self, key: WorkerKey, engine_hash: u64) -> Option<u64> {
    self.workers.get(&key)?.by_engine.get(&engine_hash).map(|n| n.seq)
  }

  /// A stored event on `tier`: `engine[i]` names the block whose local hash is `local[i]`, each
  /// the child of the one before, the first the child of the block whose sequence hash is
  /// `parent_seq` (None: the root). All or nothing; storing what is already held changes nothing.
  pub fn store(&mut self, key: WorkerKey, tier: LowerTier, parent_seq: Option<u64>, engine: &[u64], local: &[u64]) -> Result<(), RejectReason> {
    if engine.len() != local.len() {
      return Err(RejectReason::Malformed);
    }
    self.seqs.clear();
    let mut prev = parent_seq;
    for &l in local {
      let s = prev.map_or(l, |p| chain_hash(p, l));
      self.seqs.push(s);
      prev = Some(s);
    }
    if let Some(w) = self.workers.get(&key) {
      // An engine hash already naming another block: the engine reused a name (or collided).
      if engine.iter().zip(&self.seqs).any(|(e, &s)| w.by_engine.get(e).is_some_and(|n| n.seq != s)) {
        return Err(RejectReason::HashCollision);
      }
    }
    if engine.is_empty() {
      return Ok(());
    }
    let w = self.workers.entry(key).or_default();
    let bit = tier.bit();
    let t = tier as usize;
    for (&e, &s) in engine.iter().zip(&self.seqs) {
      let named = w.by_engine.entry(e).or_insert(Named { seq: s, tiers: 0 });
      if named.tiers & bit != 0 {
        continue;
      }
      named.tiers |= bit;
      let counts = w.by_seq.entry(s).or_default();
      counts[t] += 1;
      if counts[t] == 1 {
        self.held[t] += 1;
      }
    }
    Ok(())
  }

  /// A removed event on `tier`: returns how many of the hashes named a block held there.
  pub fn remove(&mut self, key: WorkerKey, tier: LowerTier, engine: &[u64]) -> usize {
    let Some(w) = self.workers.get_mut(&key) else { return 0 };
    let bit = tier.bit();
    let t = tier as usize;
    let mut found = 0;
    for e in engine {
      let Some(named) = w.by_engine.get_mut(e) else { continue };
      if named.tiers & bit == 0 {
        continue;
      }
      found += 1;
      named.tiers &= !bit;
      let seq = named.seq;
      if named.tiers == 0 {
        w.by_engine.remove(e);
      }
      if let Some(counts) = w.by_seq.get_mut(&seq) {
        counts[t] -= 1;
        if counts[t] == 0 {
          self.held[t] -= 1;
          if counts.iter().all(|&c| c == 0) {
            w.by_seq.remove(&seq);
          }
        }
      }
    }
    if w.by_engine.is_empty() {
      self.workers.remove(&key);
    }
    found
  }

  /// Forgets every lower-tier block of (worker, dp_rank).
  pub fn clear(&mut self, key: WorkerKey) {
    if let Some(w) = self.workers.remove(&key) {
      for counts in w.by_seq.values() {
        for (t, &c) in counts.iter().enumerate() {
          if c > 0 {
            self.held[t] -= 1;
          }
        }
      }
    }
  }

  /// Forgets every dp rank of `worker`.
  pub fn remove_worker(&mut self, worker: u64) {
    let keys: Vec<WorkerKey> = self.workers.keys().filter(|k| k.worker == worker).copied().collect();
    for k in keys {
      self.clear(k);
    }
  }

  /// For each worker holding lower-tier blocks, the blocks of the prompt (`seq`: its sequence
  /// hashes) it could reload right after its device prefix (`device`: the device index's matches;
  /// absent = 0): consecutive blocks each held on some lower tier, each counted once at its best
  /// (nearest) tier. Workers with none are left out. Clears `out` first.
  pub fn extensions_into(&self, seq: &[u64], device: &[(WorkerKey, u32)], out: &mut Vec<(WorkerKey, TierExtension)>) {
    out.clear();
    for (&key, w) in &self.workers {
      let start = device.iter().find(|(k, _)| *k == key).map_or(0, |&(_, n)| n as usize);
      let mut ext = TierExtension::default();
      for s in seq.iter().skip(start) {
        let Some(counts) = w.by_seq.get(s) else { break };
        let best = counts.iter().position(|&c| c > 0).expect("an entry is held on some tier");
        ext.blocks[best] += 1;
      }
      if ext.total() > 0 {
        out.push((key, ext));
      }
    }
  }

  /// Approximate bytes held (table capacities).
  pub fn bytes(&self) -> usize {
    self.workers.values().map(|w| w.by_engine.capacity() * (8 + std::mem::size_of::<Named>() + 1) + w.by_seq.capacity() * (8 + 4 * LOWER_TIERS + 1)).sum()
  }
}

#[cfg(test)]
mod tests;
