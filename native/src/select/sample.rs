//! Picking one index from scores (lower is better) with a seeded RNG: uniform among exact ties at
//! temperature 0, softmax over min-max-normalised scores otherwise.

use fastrand::Rng;

/// Lowest score; exact ties broken uniformly at random (reservoir sampling, one pass).
pub fn argmin_uniform_ties(scores: &[f64], rng: &mut Rng) -> usize {
  debug_assert!(!scores.is_empty());
  let mut best = 0usize;
  let mut ties = 1u32;
  for (i, &s) in scores.iter().enumerate().skip(1) {
    if s < scores[best] {
      best = i;
      ties = 1;
    } else if s == scores[best] {
      ties += 1;
      if rng.u32(0..ties) == 0 {
        best = i;
      }
    }
  }
  best
}

/// Softmax sampling: p(i) proportional to exp(-(s_i - min) / (max - min) / temperature).
/// All scores equal: uniform.
pub fn softmax_sample(scores: &[f64], temperature: f64, rng: &mut Rng) -> usize {
  debug_assert!(!scores.is_empty() && temperature > 0.0);
  let (min, max) = scores.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &s| (lo.min(s), hi.max(s)));
  let range = max - min;
  // Equal scores, or non-finite ones (NaN range): uniform.
  if !range.is_finite() || range <= 0.0 {
    return rng.usize(0..scores.len());
  }
  let weight = |s: f64| (-((s - min) / range) / temperature).exp();
  let total: f64 = scores.iter().map(|&s| weight(s)).sum();
  let mut target = rng.f64() * total;
  for (i, &s) in scores.iter().enumerate() {
    target -= weight(s);
    if target < 0.0 {
      return i;
    }
  }
  // Rounding left a sliver: the last index with a non-zero weight.
  scores.iter().rposition(|&s| weight(s) > 0.0).unwrap_or(scores.len() - 1)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn argmin_picks_the_lowest() {
    let mut rng = Rng::with_seed(1);
    assert_eq!(argmin_uniform_ties(&[3.0, 1.0, 2.0], &mut rng), 1);
    assert_eq!(argmin_uniform_ties(&[5.0], &mut rng), 0);
  }

  #[test]
  fn ties_spread_uniformly() {
    let mut rng = Rng::with_seed(2);
    let scores = [1.0, 0.5, 0.5, 9.0, 0.5];
    let mut counts = [0u32; 5];
    for _ in 0..30_000 {
      counts[argmin_uniform_ties(&scores, &mut rng)] += 1;
    }
    assert_eq!(counts[0] + counts[3], 0);
    for i in [1, 2, 4] {
      // Expected 10 000 each; seeded, so the tolerance is for robustness, not flakiness.
      assert!((9_000..11_000).contains(&counts[i]), "{counts:?}");
    }
  }

  #[test]
  fn softmax_follows_the_normalised_costs() {
    let mut rng = Rng::with_seed(3);
    let scores = [10.0, 20.0, 30.0];
    let t = 0.5;
    let w: Vec<f64> = [0.0, 0.5, 1.0].iter().map(|x: &f64| (-x / t).exp()).collect();
    let sum: f64 = w.iter().sum();
    let n = 60_000;
    let mut counts = [0u32; 3];
    for _ in 0..n {
      counts[softmax_sample(&scores, t, &mut rng)] += 1;
    }
    for i in 0..3 {
      let expected = w[i] / sum;
      let got = counts[i] as f64 / n as f64;
      assert!((got - expected).abs() < 0.015, "index {i}: {got} vs {expected}");
    }
    // Scale invariance: the same ratios after multiplying every cost.
    let mut rng2 = Rng::with_seed(3);
    let scaled = [100.0, 200.0, 300.0];
    let again: Vec<usize> = (0..100).map(|_| softmax_sample(&scaled, t, &mut rng2)).collect();
    let mut rng3 = Rng::with_seed(3);
    let first: Vec<usize> = (0..100).map(|_| softmax_sample(&scores, t, &mut rng3)).collect();
    assert_eq!(again, first);
  }

  #[test]
  fn softmax_with_equal_costs_is_uniform_and_low_temperature_is_greedy() {
    let mut rng = Rng::with_seed(4);
    let mut counts = [0u32; 2];
    for _ in 0..10_000 {
      counts[softmax_sample(&[7.0, 7.0], 1.0, &mut rng)] += 1;
    }
    assert!((4_500..5_500).contains(&counts[0]), "{counts:?}");
    for _ in 0..1_000 {
      assert_eq!(softmax_sample(&[5.0, 1.0, 3.0], 1e-3, &mut rng), 1);
    }
  }
}
