//! `NativeRoutingCore`: the routing core of one worker pool, sharing the radix tree of a
//! `NativeIndexer`. Conversions and checks only; the decision is `select::RoutingCore::route`.
//!
//! The state lives behind an `Rc<RefCell<..>>` registered under a handle, so the hand-written
//! `routeFast` (bindings/fast.rs) reaches the same core without napi-derive's per-call glue.
//!
//! route()/query() write the decision into a Float64Array the caller owns and reuses, as
//! layout.rs's `decision` and `candidate` lay it out (`write_decision`); they return the number of
//! candidates.

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{coded, range_error, type_error, Code, CodedError, Result};
use super::fast;
use super::indexer::{lock, NativeIndexer, SharedIndex};
use super::layout::{candidate, decision, DECISION_LEN};
use crate::indexer::RadixIndexer;
use crate::load::WorkerKey;
use crate::select::{
  self, CandidateCost, Decision, Mode, Multimodal, Policy, PrefixIndex, RemoteBooking, RouteError, RouteRequest, RoutingCore, TtftModel, WorkerSpec,
};
use crate::tiers::{TierExtension, LOWER_TIERS};

const MAX_ID: f64 = 9_007_199_254_740_991.0; // 2^53 - 1

impl PrefixIndex for RadixIndexer {
  fn find_matches_into(&mut self, local_hashes: &[u64], now_ms: f64, out: &mut Vec<(WorkerKey, u32)>) {
    RadixIndexer::find_matches_into(self, local_hashes, false, now_ms, out)
  }
  fn record_routing(&mut self, key: WorkerKey, local_hashes: &[u64], now_ms: f64) {
    RadixIndexer::record_routing(self, key, local_hashes, now_ms)
  }
  fn lower_extensions_into(&mut self, local_hashes: &[u64], device: &[(WorkerKey, u32)], out: &mut Vec<(WorkerKey, TierExtension)>) {
    // Lower tiers key blocks by sequence hash: chained only when some worker holds any.
    if self.lower_tiers().is_empty() {
      out.clear();
      return;
    }
    RadixIndexer::lower_extensions_into(self, &crate::hash::sequence_hashes(local_hashes), device, out)
  }
}

/// The ttft policy's model of a worker (select::TtftModel), every field given.
#[napi(object)]
pub struct NativeTtftModel {
  /// [a, b, c] of a prefill step of N tokens: a N^2 + b N + c ms.
  pub prefill: Vec<f64>,
  /// [a, b, c] of a decode pass at KV usage u: max(decodeMinMs, a u^2 + b u + c) ms.
  pub decode: Vec<f64>,
  pub decode_min_ms: f64,
  pub max_batched_tokens: u32,
  /// [host, disk, external] ms per reloaded token.
  pub reload_ms_per_token: Vec<f64>,
  pub transfer_ms_per_token: f64,
}

#[napi(object)]
pub struct NativeRoutingConfig {
  pub block_size: u32,
  pub policy: String,
  pub overlap_score_credit: f64,
  pub prefill_load_scale: f64,
  pub temperature: f64,
  pub busy_decode_fraction: Option<f64>,
  pub busy_prefill_tokens: Option<f64>,
  pub max_queued_prefill_tokens: Option<f64>,
  pub stale_booking_ms: f64,
  pub seed: f64,
  pub approximate: bool,
  /// [host, disk, external] credit per reloadable block (default Dynamo's 0.75, 0.25, 0.25).
  pub tier_credit: Option<Vec<f64>>,
  pub ttft: Option<NativeTtftModel>,
}

#[napi(object)]
pub struct NativeWorkerSpec {
  pub worker: f64,
  pub dp_size: u32,
  pub kv_capacity_blocks: Option<f64>,
  /// This worker's ttft model (default: the pool's).
  pub ttft: Option<NativeTtftModel>,
}

/// The rarely used per-request fields (absent on the common path).
#[napi(object)]
pub struct NativeRouteOptions {
  pub mm_offsets: Option<Uint32Array>,
  pub mm_hashes: Option<BigUint64Array>,
  pub allowed_workers: Option<Float64Array>,
  pub pinned_worker: Option<f64>,
  pub pinned_dp_rank: Option<u32>,
  pub expected_output_tokens: Option<f64>,
  /// The request's priority class, when its engine schedules by priority.
  pub engine_priority: Option<i32>,
  pub overlap_score_credit: Option<f64>,
  pub prefill_load_scale: Option<f64>,
  pub temperature: Option<f64>,
}

#[napi(object)]
pub struct NativeWorkerLoad {
  pub worker: f64,
  pub dp_rank: u32,
  pub prefill_tokens: f64,
  pub decode_blocks: f64,
  pub active_blocks: f64,
  pub requests: u32,
}

#[napi(object)]
pub struct NativeRoutingTotals {
  pub prefill_tokens: f64,
  pub decode_blocks: f64,
  pub requests: f64,
}

#[napi(object)]
pub struct NativeRoutingStats {
  pub booked: f64,
  pub freed: f64,
  pub expired: f64,
  pub active: f64,
}

/// Bookings other router replicas announced: counters, and how many each holds now.
#[napi(object)]
pub struct NativeRemoteStats {
  pub booked: f64,
  pub freed: f64,
  pub expired: f64,
  pub dropped: f64,
  pub active: f64,
  pub replicas: Vec<NativeReplicaBookings>,
}

#[napi(object)]
pub struct NativeReplicaBookings {
  pub replica: String,
  pub requests: f64,
}

/// A routing core and what its calls share.
pub struct CoreState {
  indexer: SharedIndex,
  pub(super) core: RoutingCore,
  /// Reused for the allowed-worker ids of a request.
  allowed: Vec<u64>,
  /// The retry hint of the last backpressure refusal (ms).
  last_retry_after_ms: f64,
}

/// A core, shared by its JavaScript object and the fast calls' table.
pub type SharedCore = Rc<RefCell<CoreState>>;

#[napi]
pub struct NativeRoutingCore {
  state: SharedCore,
  /// This core's handle in the fast calls' table.
  handle: u32,
}

impl Drop for NativeRoutingCore {
  fn drop(&mut self) {
    fast::unregister_core(self.handle);
  }
}

#[napi]
impl NativeRoutingCore {
  #[napi(constructor)]
  pub fn new(indexer: &NativeIndexer, config: NativeRoutingConfig) -> Result<Self> {
    let shared = indexer.shared();
    let (index_block_size, window) = {
      let ix = lock(&shared);
      (ix.block_size(), ix.window())
    };
    if config.block_size != index_block_size {
      return Err(range_error(format!("blockSize {} differs from the indexer's {}", config.block_size, index_block_size)));
    }
    let policy =
      Policy::parse(&config.policy).ok_or_else(|| range_error(format!("policy must be one of {}, got '{}'", Policy::NAMES.join(", "), config.policy)))?;
    let cfg = select::RoutingConfig {
      block_size: config.block_size,
      policy,
      overlap_score_credit: config.overlap_score_credit,
      prefill_load_scale: config.prefill_load_scale,
      temperature: config.temperature,
      busy_decode_fraction: config.busy_decode_fraction,
      busy_prefill_tokens: config.busy_prefill_tokens.map(|v| to_count(v, "busyPrefillTokens")).transpose()?,
      max_queued_prefill_tokens: config.max_queued_prefill_tokens.map(|v| to_count(v, "maxQueuedPrefillTokens")).transpose()?,
      stale_booking_ms: config.stale_booking_ms,
      seed: to_count(config.seed, "seed")?,
      approximate: config.approximate,
      window,
      tier_credit: match &config.tier_credit {
        Some(c) => triple(c, "tierCredit")?,
        None => select::DEFAULT_TIER_CREDIT,
      },
      ttft: config.ttft.as_ref().map(to_model).transpose()?.unwrap_or_default(),
    };
    let core = RoutingCore::new(cfg).map_err(range_error)?;
    let state = Rc::new(RefCell::new(CoreState { indexer: shared, core, allowed: Vec::new(), last_retry_after_ms: 0.0 }));
    let handle = fast::register_core(Rc::clone(&state));
    Ok(Self { state, handle })
  }

  /// The handle of this core for `routeFast(handle, tokens, requestId, nowMs, out, book)`
  /// (bindings/fast.rs): route() (book true) or query() without a seed or options.
  #[napi(getter)]
  pub fn handle(&self) -> u32 {
    self.handle
  }

  #[napi]
  pub fn set_workers(&mut self, specs: Vec<NativeWorkerSpec>) -> Result<()> {
    let specs = specs.iter().map(to_spec).collect::<Result<Vec<_>>>()?;
    self.state.borrow_mut().core.set_workers(&specs).map_err(range_error)
  }

  #[napi]
  pub fn upsert_worker(&mut self, spec: NativeWorkerSpec) -> Result<()> {
    let spec = to_spec(&spec)?;
    self.state.borrow_mut().core.upsert_worker(spec).map_err(range_error)
  }

  #[napi]
  pub fn remove_worker(&mut self, worker: f64) -> Result<bool> {
    Ok(self.state.borrow_mut().core.remove_worker(to_id(worker, "worker")?))
  }

  #[napi]
  pub fn workers(&self) -> Vec<NativeWorkerSpec> {
    self
      .state
      .borrow()
      .core
      .workers()
      .iter()
      .map(|s| NativeWorkerSpec {
        worker: s.worker as f64,
        dp_size: s.dp_size,
        kv_capacity_blocks: s.kv_capacity_blocks.map(|c| c as f64),
        ttft: s.ttft.as_ref().map(from_model),
      })
      .collect()
  }

  /// Hash + match + select + book. See the module comment for `out`.
  #[napi]
  pub fn route(
    &mut self,
    tokens: &[u32],
    request_id: String,
    now_ms: f64,
    mut out: Float64ArraySlice,
    seed: Option<BigInt>,
    options: Option<NativeRouteOptions>,
  ) -> Result<u32> {
    // SAFETY: a synchronous call on the JS thread: no JavaScript touches the buffer meanwhile.
    self.state.borrow_mut().decide(tokens, &request_id, now_ms, unsafe { out.as_mut() }, seed, options, Mode::Book)
  }

  /// The decision route() would make: books nothing, records nothing, advances nothing.
  #[napi]
  pub fn query(
    &mut self,
    tokens: &[u32],
    request_id: String,
    now_ms: f64,
    mut out: Float64ArraySlice,
    seed: Option<BigInt>,
    options: Option<NativeRouteOptions>,
  ) -> Result<u32> {
    // SAFETY: as in route().
    self.state.borrow_mut().decide(tokens, &request_id, now_ms, unsafe { out.as_mut() }, seed, options, Mode::Query)
  }

  #[napi]
  pub fn mark_prefill_completed(&mut self, request_id: String, now_ms: f64) -> bool {
    self.state.borrow_mut().core.mark_prefill_completed(&request_id, now_ms)
  }

  #[napi]
  pub fn add_output_tokens(&mut self, request_id: String, tokens: f64, now_ms: f64) -> Result<bool> {
    Ok(self.state.borrow_mut().core.add_output_tokens(&request_id, to_count(tokens, "tokens")?, now_ms))
  }

  #[napi]
  pub fn free(&mut self, request_id: String, now_ms: f64) -> bool {
    self.state.borrow_mut().core.free(&request_id, now_ms)
  }

  #[napi]
  pub fn expire_stale(&mut self, now_ms: f64) -> u32 {
    self.state.borrow_mut().core.expire_stale(now_ms) as u32
  }

  #[napi]
  pub fn load(&self) -> Vec<NativeWorkerLoad> {
    self
      .state
      .borrow()
      .core
      .load()
      .into_iter()
      .map(|l| NativeWorkerLoad {
        worker: l.key.worker as f64,
        dp_rank: l.key.dp_rank,
        prefill_tokens: l.prefill_tokens as f64,
        decode_blocks: l.decode_blocks,
        active_blocks: l.active_blocks as f64,
        requests: l.requests,
      })
      .collect()
  }

  #[napi]
  pub fn totals(&self) -> NativeRoutingTotals {
    let t = self.state.borrow().core.totals();
    NativeRoutingTotals { prefill_tokens: t.prefill_tokens as f64, decode_blocks: t.decode_blocks, requests: t.requests as f64 }
  }

  /// The retry hint (ms) of the last refusal with code ERR_KVROUTE_BACKPRESSURE.
  #[napi(getter)]
  pub fn last_retry_after_ms(&self) -> f64 {
    self.state.borrow().last_retry_after_ms
  }

  #[napi]
  pub fn stats(&self) -> NativeRoutingStats {
    let st = self.state.borrow();
    let s = st.core.stats();
    NativeRoutingStats { booked: s.booked as f64, freed: s.freed as f64, expired: s.expired as f64, active: st.core.active_requests() as f64 }
  }
}

#[napi]
impl NativeRoutingCore {
  /// The local block hashes of the last route() or query(), as little-endian u64 bytes.
  #[napi]
  pub fn last_local_hashes(&self) -> Buffer {
    let state = self.state.borrow();
    let hashes = state.core.last_local_hashes();
    let mut bytes = Vec::with_capacity(hashes.len() * 8);
    for h in hashes {
      bytes.extend_from_slice(&h.to_le_bytes());
    }
    bytes.into()
  }

  /// Books what another router replica booked (`hashes`: its prompt's local block hashes as
  /// little-endian u64 bytes). False when that replica already has the request booked here.
  #[napi]
  #[allow(clippy::too_many_arguments, reason = "a JavaScript method's parameters, as the TypeScript wrapper passes them")]
  pub fn apply_remote_booking(
    &mut self,
    origin: String,
    request_id: String,
    worker: f64,
    dp_rank: u32,
    hashes: &[u8],
    prompt_tokens: f64,
    overlap_blocks: u32,
    expected_output_tokens: Option<f64>,
    now_ms: f64,
  ) -> Result<bool> {
    if !hashes.len().is_multiple_of(8) {
      return Err(range_error(format!("hashes must be whole 8-byte hashes, got {} bytes", hashes.len())));
    }
    if dp_rank > 0xffff {
      return Err(range_error(format!("dpRank must be in 0..=65535, got {dp_rank}")));
    }
    let local: Vec<u64> = hashes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    let booking = RemoteBooking {
      origin: &origin,
      request_id: &request_id,
      key: WorkerKey { worker: to_id(worker, "worker")?, dp_rank },
      local_hashes: &local,
      prompt_tokens: to_count(prompt_tokens, "promptTokens")?,
      overlap_blocks,
      expected_output_tokens: expected_output_tokens.map(|n| to_count(n, "expectedOutputTokens")).transpose()?,
    };
    let mut state = self.state.borrow_mut();
    let state = &mut *state;
    let mut indexer = lock(&state.indexer);
    state.core.apply_remote_booking(&mut *indexer, &booking, now_ms).map_err(range_error)
  }

  #[napi]
  pub fn mark_remote_prefill_completed(&mut self, origin: String, request_id: String, now_ms: f64) -> bool {
    self.state.borrow_mut().core.mark_remote_prefill_completed(&origin, &request_id, now_ms)
  }

  #[napi]
  pub fn free_remote(&mut self, origin: String, request_id: String, now_ms: f64) -> bool {
    self.state.borrow_mut().core.free_remote(&origin, &request_id, now_ms)
  }

  /// Releases every booking of the replica `origin`; returns how many.
  #[napi]
  pub fn drop_replica(&mut self, origin: String, now_ms: f64) -> u32 {
    self.state.borrow_mut().core.drop_replica(&origin, now_ms) as u32
  }

  #[napi]
  pub fn remote_stats(&self) -> NativeRemoteStats {
    let state = self.state.borrow();
    let s = state.core.remote_stats();
    let replicas: Vec<NativeReplicaBookings> =
      state.core.remote_origins().into_iter().map(|(replica, n)| NativeReplicaBookings { replica: replica.to_owned(), requests: n as f64 }).collect();
    NativeRemoteStats {
      booked: s.booked as f64,
      freed: s.freed as f64,
      expired: s.expired as f64,
      dropped: s.dropped as f64,
      active: replicas.iter().map(|r| r.requests).sum(),
      replicas,
    }
  }
}

impl CoreState {
  /// A decision into `out` (see the module comment); the number of candidates explained.
  #[allow(clippy::too_many_arguments, reason = "route's and query's parameters, shared by the napi and the hand-written entries")]
  pub fn decide(
    &mut self,
    tokens: &[u32],
    request_id: &str,
    now_ms: f64,
    out: &mut [f64],
    seed: Option<BigInt>,
    options: Option<NativeRouteOptions>,
    mode: Mode,
  ) -> Result<u32> {
    if out.len() < DECISION_LEN {
      return Err(range_error(format!("the decision buffer needs {DECISION_LEN} entries, got {}", out.len())));
    }
    if !now_ms.is_finite() {
      return Err(range_error(format!("now must be a finite number of ms, got {now_ms}")));
    }
    let mut req = RouteRequest::new(request_id, tokens);
    if let Some(seed) = seed {
      let (negative, value, lossless) = seed.get_u64();
      if negative || !lossless {
        return Err(range_error("seed must be a u64"));
      }
      req.hash_seed = value;
    }
    if let Some(o) = &options {
      if o.mm_offsets.is_some() != o.mm_hashes.is_some() {
        return Err(type_error("mmOffsets and mmHashes go together"));
      }
      if let (Some(offsets), Some(hashes)) = (&o.mm_offsets, &o.mm_hashes) {
        req.multimodal = Some(Multimodal { offsets, hashes });
      }
      if let Some(allowed) = &o.allowed_workers {
        self.allowed.clear();
        for &w in allowed.iter() {
          self.allowed.push(to_id(w, "allowedWorkers[]")?);
        }
        req.allowed_workers = Some(&self.allowed);
      }
      req.pinned_worker = o.pinned_worker.map(|w| to_id(w, "pinnedWorker")).transpose()?;
      if let Some(rank) = o.pinned_dp_rank {
        if rank > 0xffff {
          return Err(range_error(format!("pinnedDpRank must be in 0..=65535, got {rank}")));
        }
        req.pinned_dp_rank = Some(rank);
      }
      req.expected_output_tokens = o.expected_output_tokens.map(|n| to_count(n, "expectedOutputTokens")).transpose()?;
      req.engine_priority = o.engine_priority;
      req.overlap_score_credit = o.overlap_score_credit;
      req.prefill_load_scale = o.prefill_load_scale;
      req.temperature = o.temperature;
    }
    let mut indexer = lock(&self.indexer);
    let d = match self.core.route(&mut *indexer, &req, now_ms, mode) {
      Ok(d) => d,
      Err(e) => {
        if let RouteError::Backpressure { retry_after_ms, .. } = e {
          self.last_retry_after_ms = retry_after_ms;
        }
        return Err(refusal(e));
      }
    };
    let explained = self.core.explanation();
    write_decision(&d, explained, out);
    Ok(explained.len() as u32)
  }
}

/// `d` and its candidates into `out` (DECISION_LEN entries), as layout.rs lays them out.
pub(super) fn write_decision(d: &Decision, explained: &[CandidateCost], out: &mut [f64]) {
  use decision as at;
  out[at::WORKER] = d.key.worker as f64;
  out[at::DP_RANK] = d.key.dp_rank as f64;
  out[at::OVERLAP_BLOCKS] = d.overlap_blocks as f64;
  out[at::PROMPT_TOKENS] = d.prompt_tokens as f64;
  out[at::CACHED_TOKENS] = d.cached_tokens as f64;
  out[at::PREFILL_TOKENS] = d.prefill_tokens as f64;
  out[at::HASH_US] = d.timings.hash_us;
  out[at::MATCH_US] = d.timings.match_us;
  out[at::SELECT_US] = d.timings.select_us;
  out[at::TOTAL_US] = d.timings.total_us;
  write_tiers(&mut out[at::LOWER_TIER_BLOCKS..], &d.lower);
  out[at::PREDICTED_TTFT_MS] = d.predicted_ttft_ms;
  out[at::CANDIDATES] = explained.len() as f64;
  for (i, c) in explained.iter().enumerate() {
    let o = &mut out[decision::LEN + i * candidate::LEN..][..candidate::LEN];
    o[candidate::WORKER] = c.key.worker as f64;
    o[candidate::DP_RANK] = c.key.dp_rank as f64;
    o[candidate::OVERLAP_BLOCKS] = c.overlap_blocks as f64;
    write_tiers(&mut o[candidate::LOWER_TIER_BLOCKS..], &c.lower);
    o[candidate::PREFILL_BLOCKS] = c.prefill_blocks;
    o[candidate::DECODE_BLOCKS] = c.decode_blocks;
    o[candidate::COST] = c.cost;
  }
}

/// A field of width LOWER_TIERS: host, disk, external.
fn write_tiers(out: &mut [f64], t: &TierExtension) {
  for (dst, &n) in out[..LOWER_TIERS].iter_mut().zip(&t.blocks) {
    *dst = f64::from(n);
  }
}

/// A refusal, with the code src/core/routing-errors.ts maps to its RoutingError class (the
/// backpressure retry hint is read from `lastRetryAfterMs`).
fn refusal(e: RouteError) -> CodedError {
  let code = match &e {
    RouteError::InvalidArgument(_) => Code::OutOfRange,
    RouteError::Backpressure { .. } => Code::Backpressure,
    RouteError::NoEligibleWorker(_) => Code::NoEligibleWorker,
    RouteError::MissingRoutingHint(_) => Code::MissingRoutingHint,
    RouteError::DuplicateRequest(_) => Code::DuplicateRequest,
  };
  coded(code, e.message())
}

fn to_id(v: f64, name: &str) -> Result<u64> {
  if v.fract() != 0.0 || !(0.0..=MAX_ID).contains(&v) {
    return Err(range_error(format!("{name} must be an integer in [0, 2^53), got {v}")));
  }
  Ok(v as u64)
}

fn to_count(v: f64, name: &str) -> Result<u64> {
  to_id(v, name)
}

fn to_spec(s: &NativeWorkerSpec) -> Result<WorkerSpec> {
  Ok(WorkerSpec {
    worker: to_id(s.worker, "worker")?,
    dp_size: s.dp_size,
    kv_capacity_blocks: s.kv_capacity_blocks.map(|c| to_id(c, "kvCapacityBlocks")).transpose()?,
    ttft: s.ttft.as_ref().map(to_model).transpose()?,
  })
}

fn triple(v: &[f64], name: &str) -> Result<[f64; LOWER_TIERS]> {
  <[f64; 3]>::try_from(v).map_err(|_| range_error(format!("{name} must hold 3 numbers, got {}", v.len())))
}

/// Checked by `TtftModel::validate` where it is used (the routing config, the worker spec).
fn to_model(m: &NativeTtftModel) -> Result<TtftModel> {
  Ok(TtftModel {
    prefill: triple(&m.prefill, "ttft.prefill")?,
    decode: triple(&m.decode, "ttft.decode")?,
    decode_min_ms: m.decode_min_ms,
    max_batched_tokens: m.max_batched_tokens,
    reload_ms_per_token: triple(&m.reload_ms_per_token, "ttft.reloadMsPerToken")?,
    transfer_ms_per_token: m.transfer_ms_per_token,
  })
}

fn from_model(m: &TtftModel) -> NativeTtftModel {
  NativeTtftModel {
    prefill: m.prefill.to_vec(),
    decode: m.decode.to_vec(),
    decode_min_ms: m.decode_min_ms,
    max_batched_tokens: m.max_batched_tokens,
    reload_ms_per_token: m.reload_ms_per_token.to_vec(),
    transfer_ms_per_token: m.transfer_ms_per_token,
  }
}
