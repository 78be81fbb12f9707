//! The ttft policy's estimate: how long a request would wait for its first token on a rank.
//!
//! An engine (vLLM's scheduler, which Dynamo's mocker and the simulated engine imitate) runs
//! prefill first come, first served in steps of at most `max_batched_tokens` tokens, each step also
//! decoding one token per running request. So the request's first token comes after every prefill
//! token queued ahead of it on the rank and its own uncached tokens have been computed, in steps
//! that each cost the prefill fit of their tokens plus a decode pass at the rank's KV usage, plus
//! the time to reload the blocks it finds on a lower tier, plus (a decode worker of a
//! disaggregated fleet) the time to receive the KV it lacks. The estimate is in milliseconds of
//! the model's own fit, so it needs no weight tuned per workload.
//!
//! The policy's score adds one more term in the same unit: the time the rank will spend on this
//! request's own uncached tokens, which every request routed there after it waits for. Minimising
//! the request's TTFT alone is greedy: it sends a prompt to an idle rank that lacks its prefix as
//! soon as that saves a few ms, recomputing blocks another rank holds and copying them into a
//! second cache; the fleet then spends its capacity on recomputation and its caches on copies
//! (hit rate and saturation load both suffer). Charging the work to the choice makes a cache hit
//! worth twice its prefill time, with no weight to tune: the price is the rank's own step time.

use super::config::check_non_negative;
use crate::load::RankLoad;
use crate::tiers::{TierExtension, LOWER_TIERS};

/// A worker's timing, as Dynamo's mocker models an engine (its published fit by default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TtftModel {
  /// Prefill step of N tokens: a N^2 + b N + c ms.
  pub prefill: [f64; 3],
  /// Decode pass at KV usage u (fraction of the cache in use): max(min, a u^2 + b u + c) ms.
  pub decode: [f64; 3],
  pub decode_min_ms: f64,
  /// Tokens one step computes at most (vLLM's max_num_batched_tokens).
  pub max_batched_tokens: u32,
  /// Milliseconds per token to reload KV from each lower tier (host, disk, external).
  pub reload_ms_per_token: [f64; LOWER_TIERS],
  /// Milliseconds per token to receive KV from a prefill worker (decode pools of a disaggregated
  /// fleet; 0 elsewhere).
  pub transfer_ms_per_token: f64,
}

/// KV bytes per token of a Llama-3-8B-sized model: 32 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes.
pub const KV_BYTES_PER_TOKEN: f64 = 131_072.0;

/// Reload bandwidths behind the defaults, bytes/s: host memory over PCIe 4.0 x16 (about 25 GB/s
/// in practice), a local NVMe SSD (about 5 GB/s of sequential reads), an external pool over a
/// 100 Gb/s RDMA network (12.5 GB/s).
pub const DEFAULT_RELOAD_BANDWIDTH: [f64; LOWER_TIERS] = [25e9, 5e9, 12.5e9];

impl Default for TtftModel {
  fn default() -> Self {
    let ms_per_token = |bw: f64| KV_BYTES_PER_TOKEN / bw * 1000.0;
    Self {
      prefill: [4.209989e-7, 1.518344e-2, 1.650142e1],
      decode: [-25.74, 54.01, 5.74],
      decode_min_ms: 1.0,
      max_batched_tokens: 8192,
      reload_ms_per_token: DEFAULT_RELOAD_BANDWIDTH.map(ms_per_token),
      transfer_ms_per_token: 0.0,
    }
  }
}

impl TtftModel {
  pub fn validate(&self) -> Result<(), String> {
    for (v, name) in self.prefill.iter().chain(&self.decode).zip(["prefill.a", "prefill.b", "prefill.c", "decode.a", "decode.b", "decode.c"]) {
      if !v.is_finite() {
        return Err(format!("ttft.{name} must be a finite number, got {v}"));
      }
    }
    check_non_negative(self.decode_min_ms, "ttft.decode.minMs")?;
    if self.max_batched_tokens == 0 {
      return Err("ttft.maxNumBatchedTokens must be at least 1".into());
    }
    for (v, tier) in self.reload_ms_per_token.iter().zip(crate::tiers::LowerTier::ALL) {
      check_non_negative(*v, &format!("ttft.reloadMsPerToken.{}", tier.name()))?;
    }
    check_non_negative(self.transfer_ms_per_token, "ttft.transferMsPerToken")?;
    Ok(())
  }

  /// One prefill step of `tokens` tokens (0 when none), never negative.
  fn prefill_step_ms(&self, tokens: f64) -> f64 {
    if tokens <= 0.0 {
      return 0.0;
    }
    let [a, b, c] = self.prefill;
    (a * tokens * tokens + b * tokens + c).max(0.0)
  }

  /// A decode pass at KV usage `usage`.
  fn decode_ms(&self, usage: f64) -> f64 {
    let [a, b, c] = self.decode;
    (a * usage * usage + b * usage + c).max(self.decode_min_ms)
  }
}

/// What the estimate knows of a request on one rank.
#[derive(Clone, Copy, Debug)]
pub struct TtftInput<'a> {
  pub rank: &'a RankLoad,
  pub block_size: u64,
  pub prompt_tokens: u64,
  /// Leading prompt blocks in the rank's device cache (index overlap), or already being computed
  /// there by requests booked ahead of this one (their blocks are cached by the time it runs).
  pub cached_blocks: u64,
  /// Blocks after those it can reload from lower tiers.
  pub lower: TierExtension,
  /// The rank's KV cache size in blocks, when known (KV usage drives the decode pass).
  pub capacity_blocks: Option<u64>,
  /// The rank's decode blocks once this request is there (booked, with decay, plus its own new).
  pub decode_blocks: f64,
}

/// The estimate, and the uncached tokens it assumed the request computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TtftEstimate {
  /// Predicted time to first token.
  pub ms: f64,
  pub uncached_tokens: u64,
  /// Prefill time of its own uncached tokens on the rank: what requests routed there later wait for.
  pub work_ms: f64,
}

impl TtftEstimate {
  /// The ttft policy's score, lower is better: the request's predicted TTFT plus the time its own
  /// prefill holds the rank.
  pub fn score(&self) -> f64 {
    self.ms + self.work_ms
  }
}

pub fn estimate(m: &TtftModel, x: &TtftInput) -> TtftEstimate {
  let bs = x.block_size;
  let reloaded: u64 = x.lower.total() as u64;
  // At least one token is computed, however much is cached.
  let uncached = x.prompt_tokens.saturating_sub((x.cached_blocks + reloaded) * bs).max(1);
  let queued = x.rank.prefill_tokens() + uncached;
  // Each running request takes one token of every step's budget for its decode.
  let running = x.rank.requests() as u64;
  let chunk = (m.max_batched_tokens as u64).saturating_sub(running).max(1);
  let full_steps = queued / chunk;
  let rest = queued % chunk;
  let steps = full_steps + u64::from(rest > 0);
  let prefill = full_steps as f64 * m.prefill_step_ms(chunk as f64) + m.prefill_step_ms(rest as f64);
  let decode = if running > 0 {
    let usage = x.capacity_blocks.map_or(0.0, |c| (x.decode_blocks / c as f64).clamp(0.0, 1.0));
    steps as f64 * m.decode_ms(usage)
  } else {
    0.0
  };
  let reload: f64 = x.lower.blocks.iter().zip(&m.reload_ms_per_token).map(|(&b, &ms)| (b as u64 * bs) as f64 * ms).sum();
  let transfer = x.prompt_tokens.saturating_sub((x.cached_blocks + reloaded) * bs) as f64 * m.transfer_ms_per_token;
  let work = (uncached / chunk) as f64 * m.prefill_step_ms(chunk as f64) + m.prefill_step_ms((uncached % chunk) as f64);
  TtftEstimate { ms: prefill + decode + reload + transfer, uncached_tokens: uncached, work_ms: work }
}

#[cfg(test)]
mod tests;
