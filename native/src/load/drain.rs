//! How fast booked prefill tokens leave the queue, to tell a refused client when to retry.
//! Time is passed in (virtual time in the simulator); a ring of one-second buckets covers the
//! last ten seconds.

const BUCKET_MS: f64 = 1000.0;
const BUCKETS: usize = 10;
/// Retry hint when nothing has drained recently (no rate to extrapolate from).
pub const DEFAULT_RETRY_AFTER_MS: f64 = 1000.0;
const MIN_RETRY_AFTER_MS: f64 = 10.0;
const MAX_RETRY_AFTER_MS: f64 = 30_000.0;

#[derive(Debug, Clone)]
pub struct DrainRate {
  /// (bucket number = floor(now / BUCKET_MS), tokens drained in it)
  buckets: [(i64, u64); BUCKETS],
}

impl Default for DrainRate {
  fn default() -> Self {
    Self { buckets: [(i64::MIN, 0); BUCKETS] }
  }
}

impl DrainRate {
  pub fn record(&mut self, now_ms: f64, tokens: u64) {
    if tokens == 0 || !now_ms.is_finite() {
      return;
    }
    let bucket = (now_ms / BUCKET_MS).floor() as i64;
    let entry = &mut self.buckets[bucket.rem_euclid(BUCKETS as i64) as usize];
    if entry.0 != bucket {
      *entry = (bucket, 0);
    }
    entry.1 += tokens;
  }

  /// Tokens per millisecond over the recent window (0 when nothing drained).
  pub fn tokens_per_ms(&self, now_ms: f64) -> f64 {
    let current = (now_ms / BUCKET_MS).floor() as i64;
    let oldest_allowed = current - (BUCKETS as i64 - 1);
    let mut tokens = 0u64;
    let mut oldest = current;
    for &(bucket, n) in &self.buckets {
      if bucket >= oldest_allowed && bucket <= current && n > 0 {
        tokens += n;
        oldest = oldest.min(bucket);
      }
    }
    if tokens == 0 {
      return 0.0;
    }
    // The window spans from the oldest bucket with data up to now.
    let span_ms = (now_ms - oldest as f64 * BUCKET_MS).max(BUCKET_MS);
    tokens as f64 / span_ms
  }

  /// Milliseconds until `excess_tokens` should have drained at the recent rate (bounded).
  pub fn retry_after_ms(&self, excess_tokens: u64, now_ms: f64) -> f64 {
    let rate = self.tokens_per_ms(now_ms);
    if rate <= 0.0 {
      return DEFAULT_RETRY_AFTER_MS;
    }
    (excess_tokens as f64 / rate).ceil().clamp(MIN_RETRY_AFTER_MS, MAX_RETRY_AFTER_MS)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn rate_over_the_recent_window() {
    let mut d = DrainRate::default();
    assert_eq!(d.tokens_per_ms(5_000.0), 0.0);
    assert_eq!(d.retry_after_ms(100, 5_000.0), DEFAULT_RETRY_AFTER_MS);
    d.record(1_000.0, 1_000);
    d.record(2_500.0, 1_000);
    // 2000 tokens from t = 1000 to t = 3000: 1 token per ms.
    assert!((d.tokens_per_ms(3_000.0) - 1.0).abs() < 1e-9);
    assert_eq!(d.retry_after_ms(500, 3_000.0), 500.0);
    // Bounded both ways.
    assert_eq!(d.retry_after_ms(1, 3_000.0), MIN_RETRY_AFTER_MS);
    assert_eq!(d.retry_after_ms(u64::MAX / 2, 3_000.0), MAX_RETRY_AFTER_MS);
    // Old buckets fall out of the window.
    assert_eq!(d.tokens_per_ms(60_000.0), 0.0);
  }

  #[test]
  fn buckets_are_reused_after_wrapping() {
    let mut d = DrainRate::default();
    d.record(0.0, 10);
    d.record(10_000.0, 5); // same ring slot, newer bucket
    assert!((d.tokens_per_ms(10_000.0) - 5.0 / 1000.0).abs() < 1e-12);
  }
}
