//! Applies decoded batches (decode.rs) to the index for one (worker, dp_rank), counting every
//! outcome.
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
//! counted (the decoder finds both); so is whatever the index itself refuses. Never applied in
//! part.

use super::decode::{DecodeError, Decoded, Record, Shape};
use crate::indexer::{RadixIndexer, RejectReason, WorkerKey};
use crate::tiers::LOWER_TIERS;

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

/// Events applied to one lower tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCount {
  pub stored: u32,
  pub removed: u32,
}

/// Events about a medium not indexed, which were not applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediumCount {
  pub medium: String,
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

impl BatchOutcome {
  /// An outcome for `d` with nothing applied yet.
  pub fn of(d: &Decoded) -> Self {
    Self { events: d.events(), ts: d.ts, dp_rank: d.dp_rank, ..Default::default() }
  }
}

/// The shape stored events must have for `ix`.
pub fn shape_of(ix: &RadixIndexer) -> Shape {
  Shape { block_size: ix.block_size(), window: ix.window(), lower_tiers: ix.lower_tiers_enabled() }
}

/// Applies record `i` of `d` for `key`, counting it in `out`.
pub fn apply_record(ix: &mut RadixIndexer, key: WorkerKey, d: &Decoded, i: usize, out: &mut BatchOutcome) {
  match d.records[i] {
    Record::Stored { parent, engine, local_at, tier } => {
      let engine = engine.of(&d.engine);
      let local = &d.local[local_at as usize..local_at as usize + engine.len()];
      let applied = match tier {
        None => ix.apply_stored(key, parent, engine, local, 0.0),
        Some(t) => ix.apply_lower_stored(key, t, parent, engine, local),
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
    Record::Removed { engine, tier } => {
      let engine = engine.of(&d.engine);
      let found = match tier {
        None => {
          out.removed += 1;
          ix.apply_removed(key, engine, 0.0)
        }
        Some(t) => {
          out.lower_tiers[t as usize].removed += 1;
          ix.apply_lower_removed(key, t, engine)
        }
      };
      out.refused.unknown_removal += (engine.len() - found) as u32;
    }
    Record::Cleared => {
      ix.apply_cleared(key);
      out.cleared += 1;
    }
    Record::Unknown => out.unknown_types += 1,
    Record::OtherGroup => out.other_groups += 1,
    Record::OtherMedium { medium, stored } => {
      let m = out.other_medium(&d.media[medium as usize]);
      if stored {
        m.stored += 1;
      } else {
        m.removed += 1;
      }
    }
    Record::BlockSize => out.refused.block_size += 1,
    Record::TokenCount => out.refused.token_count += 1,
    Record::Empty => {}
    Record::Invalid { first } => {
      out.refused.invalid += 1;
      if first {
        out.first_invalid.clone_from(&d.first_invalid);
      }
    }
  }
}

/// Applies every record of `d` for `key`.
pub fn apply_decoded(ix: &mut RadixIndexer, key: WorkerKey, d: &Decoded) -> BatchOutcome {
  let mut out = BatchOutcome::of(d);
  for i in 0..d.records.len() {
    apply_record(ix, key, d, i, &mut out);
  }
  out
}

/// Decodes a whole batch (into `d`, reused) and applies it for `key`. A payload that is not a
/// valid batch applies nothing.
pub fn apply_batch(ix: &mut RadixIndexer, key: WorkerKey, bytes: &[u8], d: &mut Decoded) -> Result<BatchOutcome, DecodeError> {
  d.decode(bytes, shape_of(ix))?;
  Ok(apply_decoded(ix, key, d))
}
