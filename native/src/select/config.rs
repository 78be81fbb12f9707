//! Routing configuration and the per-request parameters derived from it.

/// How a worker is chosen among the eligible ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
  /// Lowest KV cost (cache overlap against booked load), Dynamo's default.
  Kv,
  RoundRobin,
  Random,
  /// Lowest booked load, ignoring caches.
  LeastLoaded,
  /// The worker named by the request's hint (pinned worker), ranks chosen by KV cost.
  Direct,
  /// Lowest predicted time to first token (`super::ttft`): no weight to tune.
  Ttft,
}

impl Policy {
  pub const NAMES: [&'static str; 6] = ["kv", "round_robin", "random", "least_loaded", "direct", "ttft"];

  pub fn parse(name: &str) -> Option<Self> {
    match name {
      "kv" => Some(Self::Kv),
      "round_robin" => Some(Self::RoundRobin),
      "random" => Some(Self::Random),
      "least_loaded" => Some(Self::LeastLoaded),
      "direct" => Some(Self::Direct),
      "ttft" => Some(Self::Ttft),
      _ => None,
    }
  }

  pub fn name(self) -> &'static str {
    match self {
      Self::Kv => "kv",
      Self::RoundRobin => "round_robin",
      Self::Random => "random",
      Self::LeastLoaded => "least_loaded",
      Self::Direct => "direct",
      Self::Ttft => "ttft",
    }
  }

  /// Small integer code, for compact results.
  pub fn code(self) -> u32 {
    self as u32
  }
}

#[derive(Clone, Debug)]
pub struct RoutingConfig {
  pub block_size: u32,
  pub policy: Policy,
  pub overlap_score_credit: f64,
  pub prefill_load_scale: f64,
  pub temperature: f64,
  /// Exclude a rank whose decode blocks reach this fraction of its KV capacity.
  pub busy_decode_fraction: Option<f64>,
  /// Exclude a rank whose booked prefill tokens reach this.
  pub busy_prefill_tokens: Option<u64>,
  /// Refuse a request when the pool's booked prefill tokens plus its own exceed this.
  pub max_queued_prefill_tokens: Option<u64>,
  /// Bookings untouched this long expire (may be infinite).
  pub stale_booking_ms: f64,
  pub seed: u64,
  /// Record each booked decision into the index (approximate mode).
  pub approximate: bool,
  /// Which tokens a block's hash covers (EAGLE engines: one more); the index's own setting.
  pub window: crate::hash::Window,
  /// kv's credit per block a worker can reload from each lower tier (host, disk, external),
  /// Dynamo's `host_cache_hit_weight` / `disk_cache_hit_weight` (external: the disk weight).
  pub tier_credit: [f64; crate::tiers::LOWER_TIERS],
  /// ttft's model of the workers (each worker's own when its spec has one).
  pub ttft: super::ttft::TtftModel,
}

impl RoutingConfig {
  pub fn new(block_size: u32) -> Self {
    Self {
      block_size,
      policy: Policy::Kv,
      overlap_score_credit: 1.0,
      prefill_load_scale: 1.0,
      temperature: 0.0,
      busy_decode_fraction: None,
      busy_prefill_tokens: None,
      max_queued_prefill_tokens: None,
      stale_booking_ms: 600_000.0,
      seed: 0,
      approximate: false,
      window: crate::hash::Window::Plain,
      tier_credit: DEFAULT_TIER_CREDIT,
      ttft: super::ttft::TtftModel::default(),
    }
  }

  pub fn validate(&self) -> Result<(), String> {
    if self.block_size == 0 || self.block_size > 1 << 16 {
      return Err(format!("blockSize must be an integer in 1..=65536, got {}", self.block_size));
    }
    check_non_negative(self.overlap_score_credit, "overlapScoreCredit")?;
    check_non_negative(self.prefill_load_scale, "prefillLoadScale")?;
    check_non_negative(self.temperature, "temperature")?;
    for (credit, tier) in self.tier_credit.iter().zip(crate::tiers::LowerTier::ALL) {
      check_non_negative(*credit, &format!("tierCredit.{}", tier.name()))?;
    }
    self.ttft.validate()?;
    if let Some(f) = self.busy_decode_fraction {
      if !(f.is_finite() && f > 0.0) {
        return Err(format!("busyDecodeFraction must be a finite number > 0, got {f}"));
      }
    }
    if self.busy_prefill_tokens == Some(0) {
      return Err("busyPrefillTokens must be at least 1".into());
    }
    if self.max_queued_prefill_tokens == Some(0) {
      return Err("maxQueuedPrefillTokens must be at least 1".into());
    }
    if self.stale_booking_ms.is_nan() || self.stale_booking_ms <= 0.0 {
      return Err(format!("staleBookingMs must be > 0, got {}", self.stale_booking_ms));
    }
    Ok(())
  }
}

/// Dynamo's defaults: host 0.75, disk (and external) 0.25.
pub const DEFAULT_TIER_CREDIT: [f64; crate::tiers::LOWER_TIERS] = [0.75, 0.25, 0.25];

pub fn check_non_negative(v: f64, name: &str) -> Result<f64, String> {
  if v.is_finite() && v >= 0.0 {
    Ok(v)
  } else {
    Err(format!("{name} must be a finite number >= 0, got {v}"))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn policy_names_round_trip() {
    for name in Policy::NAMES {
      assert_eq!(Policy::parse(name).unwrap().name(), name);
    }
    assert_eq!(Policy::parse("kv_approx"), None);
  }

  #[test]
  fn validation_names_the_bad_field() {
    assert!(RoutingConfig::new(16).validate().is_ok());
    let mut c = RoutingConfig::new(0);
    assert!(c.validate().unwrap_err().contains("blockSize"));
    c = RoutingConfig::new(16);
    c.temperature = f64::NAN;
    assert!(c.validate().unwrap_err().contains("temperature"));
    c = RoutingConfig::new(16);
    c.overlap_score_credit = -1.0;
    assert!(c.validate().unwrap_err().contains("overlapScoreCredit"));
    c = RoutingConfig::new(16);
    c.busy_decode_fraction = Some(0.0);
    assert!(c.validate().unwrap_err().contains("busyDecodeFraction"));
    c = RoutingConfig::new(16);
    c.stale_booking_ms = f64::INFINITY;
    assert!(c.validate().is_ok(), "bookings may never expire");
  }
}
