//! The ttft policy's estimate: how long a request would wait for its first token on a rank.
//!
//! An engine (vLLM's scheduler, which Dynamo's mocker and the simulated engine imitate) runs
//! prefill first come, first served in steps of at most `max_batched_tokens` tokens, each step also
//! decoding one token per decoding request. So the request's first token comes after the step in
//! flight, every prefill token still queued ahead of it on the rank and its own uncached tokens,
//! in steps that each cost the prefill fit of their tokens plus a decode pass at the rank's KV
//! usage (when something decodes), plus the time to reload the blocks it finds on a lower tier,
//! plus (a decode worker of a disaggregated fleet) the time to receive the KV it lacks. The
//! estimate is in milliseconds of the model's own fit, so it needs no weight tuned per workload.
//!
//! The queue ahead is what the router booked there and has not seen a first token of, less what
//! the engine has computed since the queue's progress was last observed (it filled from empty, or
//! a first token came): counted whole, a long prefill in progress made a busy rank look up to
//! its whole length slower than it is. An idle engine starts a step as work arrives; a decoding
//! one first ends its step in flight, and whatever arrives before then joins its next step.
//!
//! The policy's score adds one more term in the same unit: the time the rank will spend on this
//! request's own uncached tokens, which every request routed there after it waits for (and what
//! they add to the step of queued requests they share one with). Minimising
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
  /// The decision's time: how long the rank's booked prefill has been in progress.
  pub now_ms: f64,
  /// The request's priority class when the rank's engine schedules by priority (None: first
  /// come, first served).
  pub engine_priority: Option<i32>,
}

/// The estimate, and the uncached tokens it assumed the request computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TtftEstimate {
  /// Predicted time to first token.
  pub ms: f64,
  pub uncached_tokens: u64,
  /// The rank's time on this request's own uncached tokens (what requests routed there later
  /// wait for), plus what its tokens add to the step of the queued requests it shares one with.
  pub work_ms: f64,
}

impl TtftEstimate {
  /// The ttft policy's score, lower is better: the request's predicted TTFT plus the time its own
  /// prefill holds the rank.
  pub fn score(&self) -> f64 {
    self.ms + self.work_ms
  }
}

/// One rank's engine steps: `chunk` prefill tokens at most each, every one with a decode pass
/// when some booked request decodes.
struct Steps<'m> {
  m: &'m TtftModel,
  chunk: u64,
  decode_ms: f64,
}

impl Steps<'_> {
  fn step_ms(&self, tokens: u64) -> f64 {
    self.m.prefill_step_ms(tokens as f64) + self.decode_ms
  }

  /// `tokens` prefill tokens first come, first served: full steps, then the rest.
  fn run_ms(&self, tokens: u64) -> f64 {
    let rest = tokens % self.chunk;
    (tokens / self.chunk) as f64 * self.step_ms(self.chunk) + if rest > 0 { self.step_ms(rest) } else { 0.0 }
  }

  /// What lies ahead of a request arriving now: the rest of the step in flight (an idle engine
  /// starts a step as work arrives, a decoding one when its step in flight ends, half of one
  /// away on average; a request joins at the next step), and the queued prefill tokens left
  /// after it. The queue has run unobserved since `prefill_since_ms`, in the model's steps; its
  /// last step is never taken as over before its first token is seen.
  fn ahead(&self, rank: &RankLoad, now_ms: f64, engine_priority: Option<i32>) -> (f64, u64) {
    let (in_flight_ms, left) = self.ahead_fcfs(rank, now_ms);
    match engine_priority {
      Some(class) if left > 0 => (in_flight_ms, left_before_class(rank, left, class)),
      _ => (in_flight_ms, left),
    }
  }

  /// `ahead` on an engine serving its queue first come, first served.
  fn ahead_fcfs(&self, rank: &RankLoad, now_ms: f64) -> (f64, u64) {
    let queued = rank.prefill_tokens();
    let decode_left = self.decode_ms / 2.0;
    if queued == 0 {
      return (decode_left, 0);
    }
    let first_step = if rank.prefill_after_step() { decode_left } else { 0.0 };
    let elapsed = now_ms - rank.prefill_since_ms() - first_step;
    if elapsed < 0.0 {
      // Its first step has not started: this request's tokens join the queue's.
      return (-elapsed, queued);
    }
    let steps = queued.div_ceil(self.chunk);
    // NaN (a model of zero step time) and overflow both fall to a valid step index.
    let k = ((elapsed / self.step_ms(self.chunk)).floor() as u64).min(steps - 1);
    let in_step = (queued - k * self.chunk).min(self.chunk);
    let end = k as f64 * self.step_ms(self.chunk) + self.step_ms(in_step);
    ((end - elapsed).max(0.0), queued - k * self.chunk - in_step)
  }
}

/// Of the `left` queued tokens after the step in flight, those an engine scheduling by priority
/// computes before a request of `class`: the rest of every request it has started (running
/// requests keep their share of each step, whatever their class), and the waiting ones of its
/// class or higher. The engine takes up the queue about in booking order, so the requests it
/// has started are those the steps so far have reached.
fn left_before_class(rank: &RankLoad, left: u64, class: i32) -> u64 {
  let reached = rank.prefill_tokens() - left;
  let mut start = 0;
  let mut ahead = 0;
  for q in rank.queue() {
    let end = start + q.tokens;
    if start < reached {
      ahead += end.saturating_sub(reached);
    } else if q.class >= class {
      ahead += q.tokens;
    }
    start = end;
  }
  ahead
}

pub fn estimate(m: &TtftModel, x: &TtftInput) -> TtftEstimate {
  let bs = x.block_size;
  let reloaded: u64 = x.lower.total() as u64;
  // At least one token is computed, however much is cached.
  let uncached = x.prompt_tokens.saturating_sub((x.cached_blocks + reloaded) * bs).max(1);
  // Each decoding request takes one token of every step's budget; requests still in prefill
  // decode nothing yet.
  let decoding = x.rank.decoding() as u64;
  let decode_ms = if decoding > 0 {
    let usage = x.capacity_blocks.map_or(0.0, |c| (x.decode_blocks / c as f64).clamp(0.0, 1.0));
    m.decode_ms(usage)
  } else {
    0.0
  };
  let steps = Steps { m, chunk: (m.max_batched_tokens as u64).saturating_sub(decoding).max(1), decode_ms };
  let (in_flight_ms, queued) = steps.ahead(x.rank, x.now_ms, x.engine_priority);
  let prefill = in_flight_ms + steps.run_ms(queued + uncached);
  let reload: f64 = x.lower.blocks.iter().zip(&m.reload_ms_per_token).map(|(&b, &ms)| (b as u64 * bs) as f64 * ms).sum();
  let transfer = x.prompt_tokens.saturating_sub((x.cached_blocks + reloaded) * bs) as f64 * m.transfer_ms_per_token;
  let own = Steps { decode_ms: 0.0, ..steps };
  // The queued requests finishing in the step our first tokens join wait for them too.
  let tail = queued % steps.chunk;
  let shared = if tail > 0 { steps.step_ms((tail + uncached).min(steps.chunk)) - steps.step_ms(tail) } else { 0.0 };
  TtftEstimate { ms: prefill + reload + transfer, uncached_tokens: uncached, work_ms: own.run_ms(uncached) + shared }
}

#[cfg(test)]
mod tests;
