//! `layoutProbe*`: a distinct value in every field of each buffer layout, written through the
//! real writers (routing.rs, events.rs, fast.rs), for test/core/layout.test.ts to read back
//! through the real readers by name. For that test only: nothing in src/ calls them.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use super::events::{write_counts, BATCH_COUNTS};
use super::fast::{put_match, MATCH_INTS};
use super::layout::DECISION_LEN;
use super::routing::write_decision;
use crate::events::apply::{BatchOutcome, Refused};
use crate::indexer::WorkerKey;
use crate::select::{CandidateCost, Decision, Policy, Timings};
use crate::tiers::TierExtension;

fn need(len: usize, want: usize, what: &str) -> Result<()> {
  if len < want {
    return Err(range_error(format!("{what} needs {want} entries, got {len}")));
  }
  Ok(())
}

/// A decision with two candidates: the decision's fields 1, 2, 3, ... in field order (the tiers
/// 11, 12, 13, the ttft 14.5), candidate i's 100 (i + 1) + 1, + 2, ...; returns 2.
#[napi]
pub fn layout_probe_decision(mut out: Float64ArraySlice) -> Result<u32> {
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives.
  let out = unsafe { out.as_mut() };
  need(out.len(), DECISION_LEN, "the decision buffer")?;
  let d = Decision {
    key: WorkerKey { worker: 1, dp_rank: 2 },
    overlap_blocks: 3,
    prompt_tokens: 4,
    cached_tokens: 5,
    prefill_tokens: 6,
    timings: Timings { hash_us: 7.0, match_us: 8.0, select_us: 9.0, total_us: 10.0 },
    lower: TierExtension { blocks: [11, 12, 13] },
    predicted_ttft_ms: 14.5,
    policy: Policy::Kv,
  };
  let candidates: Vec<CandidateCost> = (1..=2u32)
    .map(|i| {
      let v = 100 * i;
      CandidateCost {
        key: WorkerKey { worker: u64::from(v + 1), dp_rank: v + 2 },
        overlap_blocks: v + 3,
        lower: TierExtension { blocks: [v + 4, v + 5, v + 6] },
        prefill_blocks: f64::from(v + 7),
        decode_blocks: f64::from(v + 8),
        cost: f64::from(v + 9) + 0.5,
      }
    })
    .collect();
  write_decision(&d, &candidates, out);
  Ok(candidates.len() as u32)
}

/// A batch's counts 1, 2, 3, ... in field order, its ts 17.5 and its dp rank 18.
#[napi]
pub fn layout_probe_batch_counts(mut out: Float64ArraySlice) -> Result<()> {
  // SAFETY: as above.
  let out = unsafe { out.as_mut() };
  need(out.len(), BATCH_COUNTS, "counts")?;
  let o = BatchOutcome {
    events: 1,
    stored: 2,
    removed: 3,
    cleared: 4,
    refused: Refused {
      block_size: 5,
      token_count: 6,
      unknown_parent: 7,
      duplicate_hash: 8,
      self_parent: 9,
      hash_collision: 10,
      index_full: 11,
      malformed: 12,
      invalid: 13,
      unknown_removal: 14,
    },
    unknown_types: 15,
    other_groups: 16,
    ts: 17.5,
    dp_rank: Some(18),
    ..BatchOutcome::default()
  };
  write_counts(&o, out);
  Ok(())
}

/// Two matches as findMatchesFast writes them: worker 2^32 x 7 + 5 (its high int used), rank 3,
/// 4 blocks; worker 9, rank 10, 11 blocks. Returns what findMatchesFast would (count x 2 + wide).
#[napi]
pub fn layout_probe_matches(mut out: Int32ArraySlice) -> Result<u32> {
  // SAFETY: as above.
  let out = unsafe { out.as_mut() };
  need(out.len(), 2 * MATCH_INTS, "out")?;
  put_match(out, 0, WorkerKey { worker: (7 << 32) | 5, dp_rank: 3 }, 4);
  put_match(out, 1, WorkerKey { worker: 9, dp_rank: 10 }, 11);
  Ok(2 << 1 | 1)
}
