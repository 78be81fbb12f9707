//! Which candidates may take a request: allowed workers, pinned worker and rank, busy thresholds.

use super::pool::Candidate;
use crate::load::LoadBook;

/// The request's restrictions. `allowed` is sorted (binary search).
#[derive(Clone, Copy, Debug, Default)]
pub struct Restrictions<'a> {
  pub allowed: Option<&'a [u64]>,
  pub pinned_worker: Option<u64>,
  pub pinned_dp_rank: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct BusyThresholds {
  pub decode_fraction: Option<f64>,
  pub prefill_tokens: Option<u64>,
}

/// Why candidates were left out, for the "no eligible worker" message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exclusions {
  pub not_allowed: usize,
  pub not_pinned: usize,
  pub busy: usize,
}

impl BusyThresholds {
  pub fn is_busy(&self, c: &Candidate, book: &LoadBook) -> bool {
    let rank = book.rank(c.rank);
    if let (Some(fraction), Some(capacity)) = (self.decode_fraction, c.capacity_blocks) {
      if rank.decode_blocks() >= fraction * capacity as f64 {
        return true;
      }
    }
    matches!(self.prefill_tokens, Some(limit) if rank.prefill_tokens() >= limit)
  }
}

/// Fills `out` with the indices of the eligible candidates (in candidate order).
/// A pinned worker is never excluded as busy: the request asked for it explicitly.
pub fn eligible_into(candidates: &[Candidate], book: &LoadBook, r: &Restrictions, busy: &BusyThresholds, out: &mut Vec<u32>) -> Exclusions {
  out.clear();
  let mut why = Exclusions::default();
  for (i, c) in candidates.iter().enumerate() {
    if r.allowed.is_some_and(|a| a.binary_search(&c.key.worker).is_err()) {
      why.not_allowed += 1;
    } else if r.pinned_worker.is_some_and(|w| w != c.key.worker) || r.pinned_dp_rank.is_some_and(|d| d != c.key.dp_rank) {
      why.not_pinned += 1;
    } else if r.pinned_worker.is_none() && busy.is_busy(c, book) {
      why.busy += 1;
    } else {
      out.push(i as u32);
    }
  }
  why
}

impl Exclusions {
  pub fn describe(&self, candidates: &[Candidate], r: &Restrictions) -> String {
    if candidates.is_empty() {
      return "no eligible worker: the pool has no workers".into();
    }
    if let Some(w) = r.pinned_worker {
      if !candidates.iter().any(|c| c.key.worker == w) {
        return format!("no eligible worker: pinned worker {w} is not in the pool");
      }
    }
    let mut parts = Vec::new();
    if self.not_allowed > 0 {
      parts.push(format!("{} not in allowedWorkers", self.not_allowed));
    }
    if self.not_pinned > 0 {
      parts.push(format!("{} not the pinned worker/dpRank", self.not_pinned));
    }
    if self.busy > 0 {
      parts.push(format!("{} busy", self.busy));
    }
    format!("no eligible worker among {} (worker, dpRank) pairs: {}", candidates.len(), parts.join(", "))
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::load::{BookRequest, WorkerKey};

  fn setup(n: u64) -> (LoadBook, Vec<Candidate>) {
    let mut book = LoadBook::new(4);
    let cands = (0..n)
      .map(|w| {
        let key = WorkerKey { worker: w, dp_rank: 0 };
        Candidate { key, rank: book.list_rank(key), capacity_blocks: Some(10), ttft: None }
      })
      .collect();
    (book, cands)
  }

  #[test]
  fn allowed_and_pinned_restrict() {
    let (book, cands) = setup(4);
    let mut out = Vec::new();
    let allowed = [1u64, 3];
    let r = Restrictions { allowed: Some(&allowed), ..Default::default() };
    let why = eligible_into(&cands, &book, &r, &BusyThresholds::default(), &mut out);
    assert_eq!(out, vec![1, 3]);
    assert_eq!(why, Exclusions { not_allowed: 2, not_pinned: 0, busy: 0 });
    let r = Restrictions { pinned_worker: Some(2), ..Default::default() };
    eligible_into(&cands, &book, &r, &BusyThresholds::default(), &mut out);
    assert_eq!(out, vec![2]);
    let r = Restrictions { pinned_worker: Some(7), ..Default::default() };
    let why = eligible_into(&cands, &book, &r, &BusyThresholds::default(), &mut out);
    assert!(out.is_empty());
    assert_eq!(why.describe(&cands, &r), "no eligible worker: pinned worker 7 is not in the pool");
  }

  #[test]
  fn busy_thresholds_exclude_unless_pinned() {
    let (mut book, cands) = setup(3);
    // Worker 0: 8 decode blocks of 10; worker 1: 12 prefill tokens.
    let hashes: Vec<u64> = (0..8).collect();
    book
      .book(&BookRequest {
        request_id: "a",
        rank: cands[0].rank,
        block_hashes: &hashes,
        prompt_tokens: 32,
        overlap_blocks: 8,
        expected_output_tokens: None,
        priority: 0,
        now_ms: 0.0,
      })
      .unwrap();
    book
      .book(&BookRequest {
        request_id: "b",
        rank: cands[1].rank,
        block_hashes: &[],
        prompt_tokens: 12,
        overlap_blocks: 0,
        expected_output_tokens: None,
        priority: 0,
        now_ms: 0.0,
      })
      .unwrap();
    let busy = BusyThresholds { decode_fraction: Some(0.8), prefill_tokens: Some(12) };
    let mut out = Vec::new();
    let why = eligible_into(&cands, &book, &Restrictions::default(), &busy, &mut out);
    assert_eq!(out, vec![2]);
    assert_eq!(why.busy, 2);
    let lenient = BusyThresholds { decode_fraction: Some(0.81), prefill_tokens: Some(13) };
    eligible_into(&cands, &book, &Restrictions::default(), &lenient, &mut out);
    assert_eq!(out, vec![0, 1, 2]);
    let pinned = Restrictions { pinned_worker: Some(0), ..Default::default() };
    eligible_into(&cands, &book, &pinned, &busy, &mut out);
    assert_eq!(out, vec![0], "a pinned worker is taken even when busy");
    assert!(why.describe(&cands, &Restrictions::default()).contains("2 busy"));
  }
}
