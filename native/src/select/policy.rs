//! The choice each policy makes among the eligible candidates, given their scores.

use fastrand::Rng;

use super::config::Policy;
use super::sample::{argmin_uniform_ties, softmax_sample};

/// Returns a position in `eligible` (candidate indices, ascending). `scores[i]` belongs to
/// `eligible[i]`: the KV cost for kv and direct, the predicted TTFT for ttft, the booked load for
/// least_loaded.
pub fn choose(policy: Policy, eligible: &[u32], scores: &[f64], temperature: f64, rr_cursor: usize, rng: &mut Rng) -> usize {
  debug_assert!(!eligible.is_empty() && eligible.len() == scores.len());
  match policy {
    Policy::Kv | Policy::Direct | Policy::Ttft if temperature > 0.0 => softmax_sample(scores, temperature, rng),
    Policy::Kv | Policy::Direct | Policy::Ttft | Policy::LeastLoaded => argmin_uniform_ties(scores, rng),
    Policy::Random => rng.usize(0..eligible.len()),
    // The next eligible candidate at or after the cursor, wrapping around.
    Policy::RoundRobin => eligible.iter().position(|&c| c as usize >= rr_cursor).unwrap_or(0),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn round_robin_takes_the_next_eligible_and_wraps() {
    let mut rng = Rng::with_seed(0);
    let eligible = [1u32, 4, 6];
    let scores = [0.0; 3];
    assert_eq!(choose(Policy::RoundRobin, &eligible, &scores, 0.0, 0, &mut rng), 0);
    assert_eq!(choose(Policy::RoundRobin, &eligible, &scores, 0.0, 2, &mut rng), 1);
    assert_eq!(choose(Policy::RoundRobin, &eligible, &scores, 0.0, 6, &mut rng), 2);
    assert_eq!(choose(Policy::RoundRobin, &eligible, &scores, 0.0, 7, &mut rng), 0);
  }

  #[test]
  fn kv_and_least_loaded_minimise_random_is_uniform() {
    let mut rng = Rng::with_seed(0);
    let eligible = [0u32, 1, 2];
    assert_eq!(choose(Policy::Kv, &eligible, &[3.0, 1.0, 2.0], 0.0, 0, &mut rng), 1);
    assert_eq!(choose(Policy::LeastLoaded, &eligible, &[3.0, 1.0, 0.5], 0.0, 0, &mut rng), 2);
    assert_eq!(choose(Policy::Direct, &eligible, &[0.0, 1.0, 2.0], 0.0, 0, &mut rng), 0);
    let mut counts = [0u32; 3];
    for _ in 0..9_000 {
      counts[choose(Policy::Random, &eligible, &[0.0, 5.0, 9.0], 0.0, 0, &mut rng)] += 1;
    }
    assert!(counts.iter().all(|&c| (2_600..3_400).contains(&c)), "{counts:?}");
  }
}
