//! The one-call decision: hash the prompt, match it against the prefix index, choose a worker
//! by policy among the eligible ones, check backpressure, book the load. The live server, the
//! offline simulator and the benchmarks all decide through `RoutingCore::route`.

use std::time::Instant;

use fastrand::Rng;

use super::config::{check_non_negative, Policy, RoutingConfig};
use super::cost::{booked_load, kv_terms, CostParams, KvTerms};
use super::decision::*;
use super::eligibility::{eligible_into, BusyThresholds, Restrictions};
use super::policy::choose;
use super::pool::{WorkerPool, WorkerSpec};
use super::ttft::{estimate, TtftInput};
use crate::hash::{BlockHasher, MmBlocks};
use crate::load::{BookRequest, BookStats, LoadBook, PrefixWalk, RankSnapshot, RemoteStats, WorkerKey, FULL_WEIGHT};
use crate::tiers::TierExtension;

/// Buffers reused by every decision (no allocation on the hot path beyond the booking's id).
#[derive(Default)]
struct Scratch {
  local: Vec<u64>,
  matches: Vec<(WorkerKey, u32)>,
  /// Overlap blocks per candidate (indexed like the pool's candidates).
  overlaps: Vec<u32>,
  /// Leading blocks of the prompt active per rank id (the load book's walk; the booking follows it).
  walk: PrefixWalk,
  lower_matches: Vec<(WorkerKey, TierExtension)>,
  /// Lower-tier blocks after the device overlap, per candidate.
  lower: Vec<TierExtension>,
  allowed: Vec<u64>,
  eligible: Vec<u32>,
  terms: Vec<KvTerms>,
  scores: Vec<f64>,
  /// The ttft policy's predicted TTFT per eligible candidate (NaN for other policies).
  predicted: Vec<f64>,
  order: Vec<u32>,
  explanation: Vec<CandidateCost>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
  pub prefill_tokens: u64,
  pub decode_blocks: f64,
  pub requests: u64,
}

pub struct RoutingCore {
  config: RoutingConfig,
  pool: WorkerPool,
  book: LoadBook,
  rng: Rng,
  rr_cursor: usize,
  next_expiry_ms: f64,
  s: Scratch,
}

impl RoutingCore {
  pub fn new(config: RoutingConfig) -> Result<Self, String> {
    config.validate()?;
    Ok(Self {
      book: LoadBook::new(config.block_size),
      rng: Rng::with_seed(config.seed),
      pool: WorkerPool::default(),
      rr_cursor: 0,
      next_expiry_ms: f64::NEG_INFINITY,
      s: Scratch::default(),
      config,
    })
  }

  pub fn config(&self) -> &RoutingConfig {
    &self.config
  }

  // ---- workers -----------------------------------------------------------------------------

  pub fn set_workers(&mut self, specs: &[WorkerSpec]) -> Result<(), String> {
    self.pool.set_workers(specs, &mut self.book)
  }

  pub fn upsert_worker(&mut self, spec: WorkerSpec) -> Result<(), String> {
    self.pool.upsert_worker(spec, &mut self.book)
  }

  pub fn remove_worker(&mut self, worker: u64) -> bool {
    self.pool.remove_worker(worker, &mut self.book)
  }

  pub fn workers(&self) -> &[WorkerSpec] {
    self.pool.specs()
  }

  // ---- the decision ------------------------------------------------------------------------

  pub fn route<I: PrefixIndex + ?Sized>(&mut self, index: &mut I, req: &RouteRequest, now_ms: f64, mode: Mode) -> Result<Decision, RouteError> {
    let start = Instant::now();
    let policy = self.config.policy;
    let invalid = RouteError::InvalidArgument;
    let params = CostParams {
      block_size: self.config.block_size as f64,
      prompt_tokens: req.tokens.len() as u64,
      overlap_score_credit: check_non_negative(req.overlap_score_credit.unwrap_or(self.config.overlap_score_credit), "overlapScoreCredit").map_err(invalid)?,
      prefill_load_scale: check_non_negative(req.prefill_load_scale.unwrap_or(self.config.prefill_load_scale), "prefillLoadScale").map_err(invalid)?,
      tier_credit: self.config.tier_credit,
    };
    let temperature = check_non_negative(req.temperature.unwrap_or(self.config.temperature), "temperature").map_err(invalid)?;
    if policy == Policy::Direct && req.pinned_worker.is_none() {
      return Err(RouteError::MissingRoutingHint("policy 'direct' needs the request's pinnedWorker (x-worker-instance-id)".into()));
    }
    if mode == Mode::Book {
      if req.request_id.is_empty() {
        return Err(invalid("requestId must be a non-empty string".into()));
      }
      self.expire_if_due(now_ms);
      if self.book.contains(req.request_id) {
        return Err(RouteError::DuplicateRequest(format!("request id '{}' is already booked", req.request_id)));
      }
    }

    hash_prompt(req, &self.config, &mut self.s.local)?;
    let hashed = Instant::now();

    index.find_matches_into(&self.s.local, now_ms, &mut self.s.matches);
    let blocks = self.s.local.len() as u32;
    self.s.overlaps.clear();
    self.s.overlaps.resize(self.pool.candidates().len(), 0);
    for &(key, n) in &self.s.matches {
      if let Some(i) = self.pool.candidate_index(&key) {
        self.s.overlaps[i] = n.min(blocks);
      }
    }
    index.lower_extensions_into(&self.s.local, &self.s.matches, &mut self.s.lower_matches);
    self.s.lower.clear();
    self.s.lower.resize(self.pool.candidates().len(), TierExtension::default());
    for &(key, ext) in &self.s.lower_matches {
      if let Some(i) = self.pool.candidate_index(&key) {
        self.s.lower[i] = ext;
      }
    }
    let matched = Instant::now();

    let s = &mut self.s;
    let allowed = match req.allowed_workers {
      Some(a) => {
        s.allowed.clear();
        s.allowed.extend_from_slice(a);
        s.allowed.sort_unstable();
        Some(&s.allowed[..])
      }
      None => None,
    };
    let restrictions = Restrictions { allowed, pinned_worker: req.pinned_worker, pinned_dp_rank: req.pinned_dp_rank };
    let busy = BusyThresholds { decode_fraction: self.config.busy_decode_fraction, prefill_tokens: self.config.busy_prefill_tokens };
    let candidates = self.pool.candidates();
    let why = eligible_into(candidates, &self.book, &restrictions, &busy, &mut s.eligible);
    if s.eligible.is_empty() {
      return Err(RouteError::NoEligibleWorker(why.describe(candidates, &restrictions)));
    }

    s.terms.clear();
    s.scores.clear();
    s.predicted.clear();
    // Every rank's active prefix of the prompt in one walk (the explanation shows it for every
    // policy).
    self.book.active_prefixes(&s.local, &mut s.walk);
    for &ci in &s.eligible {
      let c = &candidates[ci as usize];
      let rank = self.book.rank(c.rank);
      let (overlap, lower) = (s.overlaps[ci as usize], s.lower[ci as usize]);
      let terms = kv_terms(rank, s.local.len(), s.walk.prefix(c.rank), overlap, &lower, &params);
      s.terms.push(terms);
      let mut predicted = f64::NAN;
      s.scores.push(match policy {
        Policy::LeastLoaded => booked_load(rank, params.block_size),
        Policy::Ttft => {
          let cached_blocks = overlap.max(terms.active_prefix);
          let input = TtftInput {
            rank,
            block_size: self.config.block_size as u64,
            prompt_tokens: params.prompt_tokens,
            cached_blocks: cached_blocks as u64,
            lower: lower.beyond(cached_blocks - overlap),
            capacity_blocks: c.capacity_blocks,
            decode_blocks: terms.decode_blocks,
            now_ms,
            engine_priority: req.engine_priority,
          };
          let e = estimate(c.ttft.as_ref().unwrap_or(&self.config.ttft), &input);
          predicted = e.ms;
          e.score()
        }
        _ => terms.cost,
      });
      s.predicted.push(predicted);
    }
    let pos = match mode {
      Mode::Book => choose(policy, &s.eligible, &s.scores, temperature, self.rr_cursor, &mut self.rng),
      // A query draws from a copy of the stream: it predicts the next route without changing it.
      Mode::Query => choose(policy, &s.eligible, &s.scores, temperature, self.rr_cursor, &mut self.rng.clone()),
    };
    let chosen_index = s.eligible[pos] as usize;
    let chosen = candidates[chosen_index];
    let overlap_blocks = s.overlaps[chosen_index];
    let lower = s.lower[chosen_index];
    // Blocks reloaded from a lower tier are not computed: they leave the prefill queue too.
    let prefill_tokens = self.book.prefill_tokens_for(params.prompt_tokens, overlap_blocks + lower.total());

    if let Some(cap) = self.config.max_queued_prefill_tokens {
      let queued = self.book.total_prefill_tokens();
      // A request alone in an empty queue is always admitted, or it could never be served.
      if queued > 0 && queued + prefill_tokens > cap {
        let excess = queued + prefill_tokens - cap;
        let retry_after_ms = self.book.retry_after_ms(excess, now_ms);
        return Err(RouteError::Backpressure {
          retry_after_ms,
          message: format!("prefill queue full: {queued} tokens booked + {prefill_tokens} for this request exceed maxQueuedPrefillTokens {cap}"),
        });
      }
    }

    explain(s, candidates, pos);

    if mode == Mode::Book {
      let booking = BookRequest {
        request_id: req.request_id,
        rank: chosen.rank,
        block_hashes: &s.local,
        prompt_tokens: params.prompt_tokens,
        overlap_blocks: overlap_blocks + lower.total(),
        expected_output_tokens: req.expected_output_tokens,
        priority: req.engine_priority.unwrap_or(0),
        now_ms,
      };
      self.book.book_along(&booking, Some(&s.walk)).map_err(|_| RouteError::DuplicateRequest(format!("request id '{}' is already booked", req.request_id)))?;
      self.rr_cursor = chosen_index + 1;
      if self.config.approximate {
        index.record_routing(chosen.key, &s.local, now_ms);
      }
    }
    let end = Instant::now();
    let us = |a: Instant, b: Instant| b.duration_since(a).as_secs_f64() * 1e6;
    Ok(Decision {
      key: chosen.key,
      overlap_blocks,
      lower,
      prompt_tokens: params.prompt_tokens,
      cached_tokens: params.prompt_tokens - prefill_tokens,
      prefill_tokens,
      predicted_ttft_ms: s.predicted[pos],
      policy,
      timings: Timings { hash_us: us(start, hashed), match_us: us(hashed, matched), select_us: us(matched, end), total_us: us(start, end) },
    })
  }

  /// The candidates of the last decision, best first (at most `MAX_EXPLAINED`, the chosen one
  /// always among them).
  pub fn explanation(&self) -> &[CandidateCost] {
    &self.s.explanation
  }

  // ---- bookings ----------------------------------------------------------------------------

  pub fn mark_prefill_completed(&mut self, request_id: &str, now_ms: f64) -> bool {
    self.book.mark_prefill_completed(request_id, now_ms)
  }

  pub fn add_output_tokens(&mut self, request_id: &str, tokens: u64, now_ms: f64) -> bool {
    self.book.add_output_tokens(request_id, tokens, now_ms)
  }

  pub fn free(&mut self, request_id: &str, now_ms: f64) -> bool {
    self.book.free(request_id, now_ms)
  }

  pub fn expire_stale(&mut self, now_ms: f64) -> usize {
    self.book.expire_stale(now_ms, self.config.stale_booking_ms)
  }

  /// Bookings also expire lazily from `route`, so none outlives `stale_booking_ms` by much
  /// even when nobody calls `expire_stale`.
  fn expire_if_due(&mut self, now_ms: f64) {
    let stale = self.config.stale_booking_ms;
    if stale.is_finite() && now_ms >= self.next_expiry_ms {
      self.book.expire_stale(now_ms, stale);
      self.next_expiry_ms = now_ms + (stale / 8.0).max(1.0);
    }
  }

  pub fn load(&self) -> Vec<RankSnapshot> {
    self.book.snapshot()
  }

  pub fn totals(&self) -> Totals {
    Totals {
      prefill_tokens: self.book.total_prefill_tokens(),
      decode_blocks: self.book.total_decode_blocks_milli() as f64 / FULL_WEIGHT as f64,
      requests: (self.book.active_requests() + self.book.remote_requests()) as u64,
    }
  }

  pub fn stats(&self) -> BookStats {
    self.book.stats()
  }

  pub fn active_requests(&self) -> usize {
    self.book.active_requests()
  }

  pub fn is_unloaded(&self) -> bool {
    self.book.is_empty()
  }

  // ---- bookings of other router replicas ---------------------------------------------------

  /// The local block hashes of the last `route` or `query`: what a replica announces of a booking.
  pub fn last_local_hashes(&self) -> &[u64] {
    &self.s.local
  }

  /// Books what another router replica booked, on the same rank, under its origin; in
  /// approximate mode its decision is recorded in the index too, so the replicas' predicted
  /// caches agree. False when the origin already has this request booked.
  pub fn apply_remote_booking<I: PrefixIndex + ?Sized>(&mut self, index: &mut I, b: &RemoteBooking, now_ms: f64) -> Result<bool, String> {
    if b.origin.is_empty() || b.request_id.is_empty() {
      return Err("a remote booking needs its origin replica and request id".into());
    }
    self.expire_if_due(now_ms);
    let rank = self.book.rank_for(b.key);
    let req = BookRequest {
      request_id: b.request_id,
      rank,
      block_hashes: b.local_hashes,
      prompt_tokens: b.prompt_tokens,
      overlap_blocks: b.overlap_blocks,
      expected_output_tokens: b.expected_output_tokens,
      // Replicas announce no class: another replica's booking counts as class 0.
      priority: 0,
      now_ms,
    };
    if self.book.book_remote(b.origin, &req).is_err() {
      return Ok(false);
    }
    if self.config.approximate {
      index.record_routing(b.key, b.local_hashes, now_ms);
    }
    Ok(true)
  }

  pub fn mark_remote_prefill_completed(&mut self, origin: &str, request_id: &str, now_ms: f64) -> bool {
    self.book.mark_remote_prefill_completed(origin, request_id, now_ms)
  }

  pub fn free_remote(&mut self, origin: &str, request_id: &str, now_ms: f64) -> bool {
    self.book.free_remote(origin, request_id, now_ms)
  }

  /// Releases every booking of the replica `origin`; returns how many.
  pub fn drop_replica(&mut self, origin: &str, now_ms: f64) -> usize {
    self.book.drop_origin(origin, now_ms)
  }

  pub fn remote_stats(&self) -> RemoteStats {
    self.book.remote_stats()
  }

  /// (replica, bookings held here) for every other replica with bookings.
  pub fn remote_origins(&self) -> Vec<(&str, usize)> {
    self.book.remote_origins()
  }
}

/// A booking another router replica made and announced.
pub struct RemoteBooking<'a> {
  pub origin: &'a str,
  pub request_id: &'a str,
  pub key: WorkerKey,
  /// The prompt's local block hashes (the load book names a block by its path).
  pub local_hashes: &'a [u64],
  pub prompt_tokens: u64,
  pub overlap_blocks: u32,
  pub expected_output_tokens: Option<u64>,
}

/// Local hashes (with the request's seed, window and multimodal items): what the index matches
/// and the load book books (both name a block by its path, so no sequence hash is chained).
fn hash_prompt(req: &RouteRequest, config: &RoutingConfig, local: &mut Vec<u64>) -> Result<(), RouteError> {
  let mm = req.multimodal.map(|mm| MmBlocks::new(mm.offsets, mm.hashes)).transpose().map_err(RouteError::InvalidArgument)?;
  let hasher = BlockHasher::new(config.block_size as usize, req.hash_seed).window(config.window).multimodal(mm);
  local.clear();
  hasher.hash_extend(req.tokens, local);
  Ok(())
}

/// Fills the explanation: the best candidates by score, the chosen one first among equals and
/// always included.
fn explain(s: &mut Scratch, candidates: &[super::pool::Candidate], chosen_pos: usize) {
  s.order.clear();
  s.order.extend(0..s.eligible.len() as u32);
  let scores = &s.scores;
  let rank_of = |p: &u32| (scores[*p as usize], *p as usize != chosen_pos, *p);
  let by_score = |a: &u32, b: &u32| {
    let (ka, kb) = (rank_of(a), rank_of(b));
    ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1)).then(ka.2.cmp(&kb.2))
  };
  let n = s.order.len().min(MAX_EXPLAINED);
  if s.order.len() > n {
    s.order.select_nth_unstable_by(n - 1, by_score);
    s.order.truncate(n);
  }
  s.order.sort_unstable_by(by_score);
  if !s.order.contains(&(chosen_pos as u32)) {
    s.order[n - 1] = chosen_pos as u32;
  }
  s.explanation.clear();
  for &p in &s.order {
    let ci = s.eligible[p as usize] as usize;
    let t = s.terms[p as usize];
    s.explanation.push(CandidateCost {
      key: candidates[ci].key,
      overlap_blocks: s.overlaps[ci],
      lower: s.lower[ci],
      prefill_blocks: t.prefill_blocks,
      decode_blocks: t.decode_blocks,
      cost: s.scores[p as usize],
    });
  }
}

#[cfg(test)]
mod tests;
