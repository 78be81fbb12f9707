//! Applies decoded events to the index for one (worker, dp_rank), counting every outcome.
//!
//! Medium policy: the tree holds what a worker serves from GPU memory: medium "GPU" or "device"
//! (any case), or none (engines that do not say mean the GPU). Events about lower tiers (host
//! memory, disk, external pools: `crate::tiers::medium_tier`) go to the index's lower tiers and are
//! counted per tier in `BatchOutcome::lower_tiers`; events about a medium no engine is known to
//! send, or about lower tiers when the index does not keep them, are not applied and are counted
//! by medium in `BatchOutcome::other_media`.
//!
//! A stored event whose block size differs from the index's, or whose token count is not what
//! hashing its blocks reads (blocks x block size, + 1 with EAGLE windows), is refused whole and
//! counted; so is whatever the index itself refuses. Never applied in part.

use super::decode::{DecodeError, Event, Scratch};
use crate::hash::{block_seed, BlockHasher, MmBlocks};
use crate::indexer::{RadixIndexer, RejectReason, WorkerKey};
use crate::tiers::{medium_tier, LowerTier, Medium, LOWER_TIERS};

/// Refused stored events by reason, and removed hashes that named nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
  pub block_size: u32,
  pub token_count: u32,
  pub unknown_parent: u32,
  pub duplicate_hash: u32,
  pub self_parent: u32,
  pub hash_collision: u32,
  pub index_full: u32,
  pub malformed: u32,
  /// Events whose fields had the wrong types (the first one's error is `first_invalid`).
  pub invalid: u32,
  /// Removed hashes that named no block of the worker (one per hash).
  pub unknown_removal: u32,
}

/// Events about another medium than the device, which were not applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediumCount {
  pub medium: String,
  pub stored: u32,
  pub removed: u32,
}

/// Events applied to one lower tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCount {
  pub stored: u32,
  pub removed: u32,
}

/// What one batch did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchOutcome {
  /// Events in the batch.
  pub events: u32,
  /// Device events applied.
  pub stored: u32,
  pub removed: u32,
  pub cleared: u32,
  /// Lower-tier events applied, by `LowerTier as usize`.
  pub lower_tiers: [TierCount; LOWER_TIERS],
  pub refused: Refused,
  pub unknown_types: u32,
  pub other_groups: u32,
  /// Per medium other than the device, in order of first appearance.
  pub other_media: Vec<MediumCount>,
  pub first_invalid: Option<DecodeError>,
  /// The batch's own timestamp and dp rank (the endpoint decides the rank the events go to).
  pub ts: f64,
  pub dp_rank: Option<u32>,
}

impl BatchOutcome {
  /// Events applied (stored, removed, cleared, on any tier).
  pub fn applied(&self) -> u32 {
    self.stored + self.removed + self.cleared + self.lower_tiers.iter().map(|t| t.stored + t.removed).sum::<u32>()
  }

  fn other_medium(&mut self, medium: &str) -> &mut MediumCount {
    let i = match self.other_media.iter().position(|m| m.medium == medium) {
      Some(i) => i,
      None => {
        self.other_media.push(MediumCount { medium: medium.to_string(), ..Default::default() });
        self.other_media.len() - 1
      }
    };
    &mut self.other_media[i]
  }
}

/// Where an event about `medium` goes: the tree, a lower tier, or nowhere (None: counted only).
fn destination(ix: &RadixIndexer, medium: Option<&str>) -> Option<Option<LowerTier>> {
  match medium_tier(medium) {
    Medium::Device => Some(None),
    Medium::Lower(t) if ix.lower_tiers_enabled() => Some(Some(t)),
    _ => None,
  }
}

/// Applies one decoded event (its arrays in `s`) for `key`; `local` is scratch for its hashes.
pub fn apply_event(ix: &mut RadixIndexer, key: WorkerKey, event: Event, s: &Scratch, local: &mut Vec<u64>, out: &mut BatchOutcome) {
  match event {
    Event::Stored { parent, block_size, medium, lora_name, multimodal } => {
      let Some(tier) = destination(ix, medium) else {
        out.other_medium(medium.unwrap_or_default()).stored += 1;
        return;
      };
      let n = s.hashes.len();
      let bs = ix.block_size() as usize;
      if block_size != bs as u64 {
        out.refused.block_size += 1;
        return;
      }
      if s.tokens.len() != ix.window().tokens_for(n, bs) {
        out.refused.token_count += 1;
        return;
      }
      if n == 0 {
        return; // nothing stored: nothing to do
      }
      let mm = if multimodal {
        let offsets = &s.mm_offsets[..s.mm_offsets.len().min(n + 1)];
        Some(MmBlocks::new(offsets, &s.mm_hashes).expect("the decoder builds consistent offsets"))
      } else {
        None
      };
      local.clear();
      BlockHasher::new(bs, block_seed(lora_name, None)).window(ix.window()).multimodal(mm).hash_extend(&s.tokens, local);
      let applied = match tier {
        None => ix.apply_stored(key, parent, &s.hashes, local, 0.0),
        Some(t) => ix.apply_lower_stored(key, t, parent, &s.hashes, local),
      };
      match applied {
        Ok(()) => match tier {
          None => out.stored += 1,
          Some(t) => out.lower_tiers[t as usize].stored += 1,
        },
        Err(reason) => {
          let r = &mut out.refused;
          match reason {
            RejectReason::UnknownParent => r.unknown_parent += 1,
            RejectReason::DuplicateHash => r.duplicate_hash += 1,
            RejectReason::SelfParent => r.self_parent += 1,
            RejectReason::HashCollision => r.hash_collision += 1,
            RejectReason::IndexFull => r.index_full += 1,
            RejectReason::Malformed | RejectReason::WrongMode => r.malformed += 1,
          }
        }
      }
    }
    Event::Removed { medium } => {
      let Some(tier) = destination(ix, medium) else {
        out.other_medium(medium.unwrap_or_default()).removed += 1;
        return;
      };
      let found = match tier {
        None => {
          out.removed += 1;
          ix.apply_removed(key, &s.hashes, 0.0)
        }
        Some(t) => {
          out.lower_tiers[t as usize].removed += 1;
          ix.apply_lower_removed(key, t, &s.hashes)
        }
      };
      out.refused.unknown_removal += (s.hashes.len() - found) as u32;
    }
    Event::Cleared => {
      ix.apply_cleared(key);
      out.cleared += 1;
    }
    Event::Unknown => out.unknown_types += 1,
    Event::OtherGroup => out.other_groups += 1,
    Event::Invalid(e) => {
      out.refused.invalid += 1;
      out.first_invalid.get_or_insert(e);
    }
  }
}

/// Decodes and applies a whole batch for `key` (the synchronous path). A payload that is not a
/// valid batch applies nothing.
pub fn apply_batch(ix: &mut RadixIndexer, key: WorkerKey, bytes: &[u8]) -> Result<BatchOutcome, DecodeError> {
  let batch = super::decode::open_batch(bytes)?;
  let mut out = BatchOutcome { events: batch.events, ts: batch.ts, dp_rank: batch.dp_rank, ..Default::default() };
  let mut events = super::decode::Events::new(bytes, &batch);
  let mut s = Scratch::default();
  let mut local = Vec::new();
  while let Some(event) = events.next_event(&mut s) {
    apply_event(ix, key, event, &s, &mut local, &mut out);
  }
  Ok(out)
}
