//! What a routing call takes and returns, and how it fails.

use super::config::Policy;
use crate::load::WorkerKey;
use crate::tiers::TierExtension;

/// The prefix index a decision matches against (the radix indexer; a fake in tests).
pub trait PrefixIndex {
  /// For each (worker, rank) holding a prefix of `local_hashes`, its number of leading blocks.
  /// Clears `out` first.
  fn find_matches_into(&mut self, local_hashes: &[u64], now_ms: f64, out: &mut Vec<(WorkerKey, u32)>);
  /// Approximate mode: remember that `key` now holds these blocks.
  fn record_routing(&mut self, key: WorkerKey, local_hashes: &[u64], now_ms: f64);
  /// The blocks each (worker, rank) could reload from lower tiers right after its device prefix
  /// (`device`: the matches `find_matches_into` gave for the same prompt, whose local block
  /// hashes are `local_hashes`). Only pairs with some. Clears `out` first. Default: no lower tiers.
  fn lower_extensions_into(&mut self, local_hashes: &[u64], device: &[(WorkerKey, u32)], out: &mut Vec<(WorkerKey, TierExtension)>) {
    let _ = (local_hashes, device);
    out.clear();
  }
}

/// Multimodal items per block, CSR: block i holds hashes[offsets[i]..offsets[i + 1]].
#[derive(Clone, Copy, Debug)]
pub struct Multimodal<'a> {
  pub offsets: &'a [u32],
  pub hashes: &'a [u64],
}

#[derive(Clone, Copy, Debug)]
pub struct RouteRequest<'a> {
  /// Empty for a query without an id.
  pub request_id: &'a str,
  pub tokens: &'a [u32],
  /// Local-hash seed for the request's LoRA adapter and cache namespace.
  pub hash_seed: u64,
  pub multimodal: Option<Multimodal<'a>>,
  pub allowed_workers: Option<&'a [u64]>,
  pub pinned_worker: Option<u64>,
  pub pinned_dp_rank: Option<u32>,
  pub expected_output_tokens: Option<u64>,
  /// The request's priority class when its engine schedules by priority (the router forwards
  /// it): booked under that class, and the ttft estimate counts only the queued work of its
  /// class or higher. None: the engine serves first come, first served.
  pub engine_priority: Option<i32>,
  pub overlap_score_credit: Option<f64>,
  pub prefill_load_scale: Option<f64>,
  pub temperature: Option<f64>,
}

impl<'a> RouteRequest<'a> {
  pub fn new(request_id: &'a str, tokens: &'a [u32]) -> Self {
    Self {
      request_id,
      tokens,
      hash_seed: crate::hash::HASH_SEED,
      multimodal: None,
      allowed_workers: None,
      pinned_worker: None,
      pinned_dp_rank: None,
      expected_output_tokens: None,
      engine_priority: None,
      overlap_score_credit: None,
      prefill_load_scale: None,
      temperature: None,
    }
  }
}

/// Book the decision (route) or only report it (query: books nothing, records nothing, leaves
/// the round-robin cursor and the random stream untouched).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
  Book,
  Query,
}

/// Wall time of the phases of one decision, in microseconds (measurement only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
  pub hash_us: f64,
  pub match_us: f64,
  /// Eligibility, costs, choice, booking and (approximate mode) recording.
  pub select_us: f64,
  pub total_us: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
  pub key: WorkerKey,
  /// Leading prompt blocks in the chosen rank's device cache.
  pub overlap_blocks: u32,
  /// The blocks after those it can reload from lower tiers, per tier.
  pub lower: TierExtension,
  pub prompt_tokens: u64,
  /// (overlap_blocks + reloadable blocks) x block size, at most the prompt.
  pub cached_tokens: u64,
  /// Prefill tokens booked (or that would be): prompt - cached.
  pub prefill_tokens: u64,
  /// The ttft policy's predicted time to first token on the chosen rank, ms (NaN for other policies).
  pub predicted_ttft_ms: f64,
  pub policy: Policy,
  pub timings: Timings,
}

/// One candidate's terms in a decision's explanation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CandidateCost {
  pub key: WorkerKey,
  pub overlap_blocks: u32,
  pub lower: TierExtension,
  pub prefill_blocks: f64,
  pub decode_blocks: f64,
  /// The policy's score (lower is better): the KV cost for kv and direct, the predicted time to
  /// first token plus the rank's time on its own prefill, in ms, for ttft, the booked load in blocks for least_loaded; for round_robin and
  /// random (which do not score), the KV cost.
  pub cost: f64,
}

/// Candidates listed in an explanation.
pub const MAX_EXPLAINED: usize = 8;

#[derive(Clone, Debug, PartialEq)]
pub enum RouteError {
  NoEligibleWorker(String),
  Backpressure {
    retry_after_ms: f64,
    message: String,
  },
  MissingRoutingHint(String),
  DuplicateRequest(String),
  /// A malformed argument (the caller's bug): a RangeError in JavaScript.
  InvalidArgument(String),
}

impl RouteError {
  /// The code of the JavaScript error class (src/core/routing-errors.ts).
  pub fn code(&self) -> &'static str {
    match self {
      Self::NoEligibleWorker(_) => "no_eligible_worker",
      Self::Backpressure { .. } => "backpressure",
      Self::MissingRoutingHint(_) => "missing_routing_hint",
      Self::DuplicateRequest(_) => "duplicate_request_id",
      Self::InvalidArgument(_) => "invalid_argument",
    }
  }

  pub fn message(&self) -> &str {
    match self {
      Self::NoEligibleWorker(m) | Self::MissingRoutingHint(m) | Self::DuplicateRequest(m) | Self::InvalidArgument(m) => m,
      Self::Backpressure { message, .. } => message,
    }
  }
}
