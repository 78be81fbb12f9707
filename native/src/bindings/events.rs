//! KV event batches applied from their payload bytes (crate::events), synchronously or on a libuv
//! thread, and the indexer's snapshot and restore as tasks off the JavaScript thread.
//!
//! The async apply holds a reference to the caller's payload (no copy on the JavaScript thread),
//! decodes the whole batch without the index's lock, then takes the lock to apply one event at a
//! time, so a findMatches or a routing decision waits at most one event. It stops, marking the
//! result `cancelled`, as soon as the worker is removed from the index (`removeWorker` bumps the
//! worker's epoch under the same lock): no event of a removed worker applies after the removal.

use napi::bindgen_prelude::*;
use napi::{Env, Task};
use napi_derive::napi;

use super::errors::{coded, range_error, Code, Result};
use super::indexer::{borrow_in, lock, to_key, NativeIndexer, SharedIndex};
use super::layout::batch_counts;
use crate::events::apply::{apply_decoded, apply_record, shape_of, BatchOutcome};
use crate::events::decode::{DecodeError, Decoded, Shape};
use crate::indexer::{IndexerMode, RadixIndexer, WorkerKey};
use crate::tiers::LowerTier;

#[napi(object)]
pub struct NativeMediumCount {
  pub medium: String,
  pub stored: u32,
  pub removed: u32,
}

/// Lower-tier events applied, per tier.
#[napi(object)]
pub struct NativeTierCount {
  /// host, disk or external.
  pub tier: String,
  pub stored: u32,
  pub removed: u32,
}

#[napi(object)]
pub struct NativeDecodeError {
  pub message: String,
  pub path: String,
}

/// What a batch did beyond its counts (applyEventBatchInto): returned only when there is some.
#[napi(object)]
pub struct NativeEventBatchExtras {
  pub lower_tiers: Vec<NativeTierCount>,
  pub other_media: Vec<NativeMediumCount>,
  pub decode_error: Option<NativeDecodeError>,
  pub invalid_event: Option<NativeDecodeError>,
}

/// What applyEventBatchAsync resolves to: the counts as applyEventBatchInto writes them, the same
/// extras, and whether the worker's removal cut the batch short (src/core/event-batch.ts builds
/// the one result object of both calls).
#[napi(object)]
pub struct NativeEventBatchAsync {
  pub counts: Float64Array,
  pub extras: Option<NativeEventBatchExtras>,
  pub cancelled: bool,
}

/// Entries of applyEventBatchInto's `counts` (layout.rs's `batch_counts`).
pub const BATCH_COUNTS: usize = batch_counts::LEN;

/// `o`'s counts into `out` (BATCH_COUNTS entries), as layout.rs lays them out.
pub(super) fn write_counts(o: &BatchOutcome, out: &mut [f64]) {
  use batch_counts as at;
  let r = &o.refused;
  for (field, n) in [
    (at::EVENTS, o.events),
    (at::STORED, o.stored),
    (at::REMOVED, o.removed),
    (at::CLEARED, o.cleared),
    (at::REFUSED_BLOCK_SIZE, r.block_size),
    (at::REFUSED_TOKEN_COUNT, r.token_count),
    (at::REFUSED_UNKNOWN_PARENT, r.unknown_parent),
    (at::REFUSED_DUPLICATE_HASH, r.duplicate_hash),
    (at::REFUSED_SELF_PARENT, r.self_parent),
    (at::REFUSED_HASH_COLLISION, r.hash_collision),
    (at::REFUSED_INDEX_FULL, r.index_full),
    (at::REFUSED_MALFORMED, r.malformed),
    (at::REFUSED_INVALID, r.invalid),
    (at::REFUSED_UNKNOWN_REMOVAL, r.unknown_removal),
    (at::UNKNOWN_TYPES, o.unknown_types),
    (at::OTHER_GROUPS, o.other_groups),
  ] {
    out[field] = f64::from(n);
  }
  out[at::TS] = o.ts;
  out[at::DP_RANK] = o.dp_rank.map_or(-1.0, f64::from);
}

fn lower_tier_counts(o: &BatchOutcome) -> Vec<NativeTierCount> {
  LowerTier::ALL
    .iter()
    .zip(o.lower_tiers)
    .filter(|(_, c)| c.stored + c.removed > 0)
    .map(|(t, c)| NativeTierCount { tier: t.name().to_string(), stored: c.stored, removed: c.removed })
    .collect()
}

fn medium_counts(media: Vec<crate::events::apply::MediumCount>) -> Vec<NativeMediumCount> {
  media.into_iter().map(|m| NativeMediumCount { medium: m.medium, stored: m.stored, removed: m.removed }).collect()
}

/// The extras of `outcome`, or None (the usual case: everything is in the counts).
fn to_extras(o: BatchOutcome, decode_error: Option<DecodeError>) -> Option<NativeEventBatchExtras> {
  let plain = decode_error.is_none() && o.first_invalid.is_none() && o.other_media.is_empty() && o.lower_tiers.iter().all(|c| c.stored + c.removed == 0);
  if plain {
    return None;
  }
  Some(NativeEventBatchExtras {
    lower_tiers: lower_tier_counts(&o),
    other_media: medium_counts(o.other_media),
    decode_error: decode_error.map(to_js_error),
    invalid_event: o.first_invalid.map(to_js_error),
  })
}

fn to_js_error(e: DecodeError) -> NativeDecodeError {
  NativeDecodeError { message: e.message, path: e.path }
}

/// The outcome to count (empty when the payload did not decode) and the decode error, if any.
fn split(outcome: std::result::Result<BatchOutcome, DecodeError>) -> (BatchOutcome, Option<DecodeError>) {
  match outcome {
    Ok(o) => (o, None),
    Err(e) => (BatchOutcome::default(), Some(e)),
  }
}

pub struct ApplyBatchTask {
  index: SharedIndex,
  key: WorkerKey,
  /// The caller's bytes, referenced (not copied) until the task is dropped.
  payload: Uint8Array,
  shape: Shape,
  epoch: u64,
}

impl ApplyBatchTask {
  fn run(&self) -> (std::result::Result<BatchOutcome, DecodeError>, bool) {
    let mut d = Decoded::default();
    if let Err(e) = d.decode(&self.payload, self.shape) {
      return (Err(e), false);
    }
    let mut out = BatchOutcome::of(&d);
    for i in 0..d.records.len() {
      let mut ix = lock(&self.index);
      if ix.worker_epoch(self.key.worker) != self.epoch {
        return (Ok(out), true);
      }
      apply_record(&mut ix, self.key, &d, i, &mut out);
    }
    (Ok(out), false)
  }
}

impl Task for ApplyBatchTask {
  type Output = (std::result::Result<BatchOutcome, DecodeError>, bool);
  type JsValue = NativeEventBatchAsync;

  fn compute(&mut self) -> napi::Result<Self::Output> {
    Ok(self.run())
  }

  fn resolve(&mut self, _env: Env, (outcome, cancelled): Self::Output) -> napi::Result<Self::JsValue> {
    let (o, decode_error) = split(outcome);
    let mut counts = vec![0.0; BATCH_COUNTS];
    write_counts(&o, &mut counts);
    Ok(NativeEventBatchAsync { counts: Float64Array::new(counts), extras: to_extras(o, decode_error), cancelled })
  }
}

pub struct SnapshotTask {
  index: SharedIndex,
}

impl Task for SnapshotTask {
  type Output = Vec<u8>;
  type JsValue = Uint8Array;

  fn compute(&mut self) -> napi::Result<Self::Output> {
    // A copy under the lock (a memory copy, the index stays usable), encoded without it.
    let copy: RadixIndexer = lock(&self.index).clone();
    Ok(copy.snapshot())
  }

  fn resolve(&mut self, _env: Env, bytes: Self::Output) -> napi::Result<Self::JsValue> {
    Ok(Uint8Array::new(bytes))
  }
}

pub struct RestoreTask {
  bytes: Vec<u8>,
}

impl Task for RestoreTask {
  type Output = std::result::Result<RadixIndexer, String>;
  type JsValue = NativeIndexer;

  fn compute(&mut self) -> napi::Result<Self::Output> {
    Ok(RadixIndexer::restore(&self.bytes))
  }

  fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
    match output {
      Ok(ix) => Ok(NativeIndexer::wrap(ix)),
      Err(message) => {
        // Rejected with the same code as the synchronous restore.
        let err = JsError::from(coded(Code::InvalidSnapshot, message)).into_unknown(env);
        Err(napi::Error::from(err))
      }
    }
  }
}

#[napi]
impl NativeIndexer {
  /// A KV event batch from its msgpack payload, applied for (worker, dpRank) on this thread
  /// (decoded without the lock: a batch applying on a libuv thread goes on meanwhile). Its counts
  /// are written into `counts` (BATCH_COUNTS entries) rather than returned in an object: one
  /// built through Node-API costs microseconds, as much as a few events.
  /// Returns what the counts cannot say (lower tiers, other media, errors), or null.
  #[napi]
  pub fn apply_event_batch_into(&self, worker: f64, dp_rank: f64, payload: &[u8], mut counts: Float64ArraySlice) -> Result<Option<NativeEventBatchExtras>> {
    // SAFETY: the slice is the caller's typed array, borrowed for this call only.
    let counts = unsafe { counts.as_mut() };
    let Some(counts) = counts.get_mut(..BATCH_COUNTS) else {
      return Err(range_error(format!("counts must hold {BATCH_COUNTS} entries")));
    };
    let key = to_key(worker, dp_rank)?;
    let shape = shape_of(&*borrow_in(self.inner_ref(), IndexerMode::Events, "applyEventBatch")?);
    let mut decoded = self.decoded.borrow_mut();
    let outcome = decoded.decode(payload, shape).map(|()| apply_decoded(&mut lock(self.inner_ref()), key, &decoded));
    decoded.release_large();
    let (o, decode_error) = split(outcome);
    write_counts(&o, counts);
    Ok(to_extras(o, decode_error))
  }

  /// The same on a libuv thread (its counts in a new array): the JavaScript thread goes on. The payload is referenced, not
  /// copied: the caller (src/core/indexer.ts, which copies unless told the bytes are left alone)
  /// must neither change nor transfer it until the promise settles.
  #[napi(ts_return_type = "Promise<NativeEventBatchAsync>")]
  pub fn apply_event_batch_async(&self, worker: f64, dp_rank: f64, payload: Uint8Array) -> Result<AsyncTask<ApplyBatchTask>> {
    let key = to_key(worker, dp_rank)?;
    let ix = borrow_in(self.inner_ref(), IndexerMode::Events, "applyEventBatchAsync")?;
    let (epoch, shape) = (ix.worker_epoch(key.worker), shape_of(&ix));
    drop(ix);
    Ok(AsyncTask::new(ApplyBatchTask { index: self.shared(), key, payload, shape, epoch }))
  }

  /// snapshot(), copied under the lock and encoded on a libuv thread.
  #[napi(ts_return_type = "Promise<Uint8Array>")]
  pub fn snapshot_async(&self) -> AsyncTask<SnapshotTask> {
    AsyncTask::new(SnapshotTask { index: self.shared() })
  }

  /// restore(), decoded and checked on a libuv thread (the bytes are copied first).
  #[napi(ts_return_type = "Promise<NativeIndexer>")]
  pub fn restore_async(bytes: &[u8]) -> AsyncTask<RestoreTask> {
    AsyncTask::new(RestoreTask { bytes: bytes.to_vec() })
  }
}
