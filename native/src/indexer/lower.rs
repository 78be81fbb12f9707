//! Events about lower tiers (host memory, disk, external pools): kept in a
//! `crate::tiers::LowerTierIndex` beside the tree, keyed by sequence hash. A stored event's parent
//! may be on a lower tier or still on the device (offloading moves a sequence's tail first), so
//! the parent's sequence hash is looked up on the lower tiers, then rebuilt from the tree.

use super::tree::ROOT_BLOCK;
use super::workers::WorkerKey;
use super::{Keying, ModeState, RadixIndexer, RejectReason};
use crate::hash::chain_hash;
use crate::tiers::{LowerTier, LowerTierIndex, TierExtension};

impl RadixIndexer {
  /// Whether events about lower tiers are indexed (events mode; on by default).
  pub fn lower_tiers_enabled(&self) -> bool {
    self.lower_enabled
  }

  /// Turns lower-tier indexing on or off (off forgets what it held). Events mode only.
  pub fn set_lower_tiers(&mut self, enabled: bool) {
    self.lower_enabled = enabled && matches!(self.state, ModeState::Events(_));
    if !self.lower_enabled {
      self.lower = LowerTierIndex::default();
    }
  }

  pub fn lower_tiers(&self) -> &LowerTierIndex {
    &self.lower
  }

  /// A stored event on a lower tier (see `apply_stored` for the arguments). All or nothing;
  /// refusals are counted as the device's are.
  pub fn apply_lower_stored(
    &mut self,
    key: WorkerKey,
    tier: LowerTier,
    parent: Option<u64>,
    engine_hashes: &[u64],
    local_hashes: &[u64],
  ) -> Result<(), RejectReason> {
    if !self.lower_enabled {
      return Err(RejectReason::WrongMode);
    }
    let outcome = self.check_lower(parent, engine_hashes).and_then(|()| {
      let parent_seq = match parent {
        None => None,
        Some(p) => Some(self.lower.sequence_hash_of(key, p).or_else(|| self.device_sequence_hash(key, p)).ok_or(RejectReason::UnknownParent)?),
      };
      self.lower.store(key, tier, parent_seq, engine_hashes, local_hashes)
    });
    match outcome {
      Ok(()) => self.counters.events_applied += 1,
      Err(reason) => self.counters.rejected.count(reason),
    }
    outcome
  }

  fn check_lower(&mut self, parent: Option<u64>, engine: &[u64]) -> Result<(), RejectReason> {
    if parent.is_some_and(|p| engine.contains(&p)) {
      return Err(RejectReason::SelfParent);
    }
    if super::events::has_duplicates(engine, &mut self.scratch.sorted) {
      return Err(RejectReason::DuplicateHash);
    }
    Ok(())
  }

  /// A removed event on a lower tier: how many hashes named a block held there (the others are
  /// counted as unknown removals).
  pub fn apply_lower_removed(&mut self, key: WorkerKey, tier: LowerTier, engine_hashes: &[u64]) -> usize {
    if !self.lower_enabled {
      return 0;
    }
    self.counters.events_applied += 1;
    let found = self.lower.remove(key, tier, engine_hashes);
    self.counters.rejected.unknown_removal += (engine_hashes.len() - found) as u64;
    found
  }

  /// Each worker's lower-tier blocks right after its device prefix (`device`, from
  /// `find_matches_into` over the same prompt); `seq` is the prompt's sequence hashes.
  pub fn lower_extensions_into(&self, seq: &[u64], device: &[(WorkerKey, u32)], out: &mut Vec<(WorkerKey, TierExtension)>) {
    if self.lower.is_empty() {
      out.clear();
      return;
    }
    self.lower.extensions_into(seq, device, out);
  }

  /// The router's sequence hash of the device block `engine_hash` names for `key`: the chain of
  /// the local keys on its path. None when unknown, or when the tree keys blocks by chained keys
  /// (an index restored from a version 1 snapshot).
  pub fn device_sequence_hash(&self, key: WorkerKey, engine_hash: u64) -> Option<u64> {
    if self.keying != Keying::Local {
      return None;
    }
    let ModeState::Events(ev) = &self.state else { return None };
    let mut block = ev.lookup(self.slots.get(key), engine_hash)?;
    // The path's keys from the block up to the root, one edge slice at a time, then chained down.
    let mut keys: Vec<u64> = Vec::with_capacity(self.tree.depth_of(block) as usize + 1);
    loop {
      let (e, p) = self.tree.locate(block);
      let edge = self.tree.edge(e);
      keys.extend(edge.keys[..=p as usize].iter().rev());
      if edge.parent == ROOT_BLOCK {
        break;
      }
      block = edge.parent;
    }
    let mut down = keys.iter().rev();
    let first = *down.next()?;
    Some(down.fold(first, |h, &k| chain_hash(h, k)))
  }
}
