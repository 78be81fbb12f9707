//! The workers of a pool and their candidate (worker, dp_rank) pairs, in a stable order
//! (the order workers were listed, ranks ascending): round robin walks it.

use rustc_hash::FxHashMap;

use super::ttft::TtftModel;
use crate::load::{LoadBook, RankId, WorkerKey};

/// dp ranks are 0..=65535.
pub const MAX_DP_SIZE: u32 = 1 << 16;
/// Bound on the candidates of one pool, so a bad spec cannot exhaust memory.
pub const MAX_CANDIDATES: usize = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerSpec {
  pub worker: u64,
  pub dp_size: u32,
  pub kv_capacity_blocks: Option<u64>,
  /// The worker's own timing for the ttft policy (None: the pool's).
  pub ttft: Option<TtftModel>,
}

#[derive(Clone, Copy, Debug)]
pub struct Candidate {
  pub key: WorkerKey,
  pub rank: RankId,
  pub capacity_blocks: Option<u64>,
  pub ttft: Option<TtftModel>,
}

#[derive(Debug, Default)]
pub struct WorkerPool {
  specs: Vec<WorkerSpec>,
  candidates: Vec<Candidate>,
  index: FxHashMap<WorkerKey, u32>,
}

impl WorkerPool {
  pub fn specs(&self) -> &[WorkerSpec] {
    &self.specs
  }

  pub fn candidates(&self) -> &[Candidate] {
    &self.candidates
  }

  /// Position of a (worker, rank) among the candidates.
  pub fn candidate_index(&self, key: &WorkerKey) -> Option<usize> {
    self.index.get(key).map(|&i| i as usize)
  }

  pub fn contains_worker(&self, worker: u64) -> bool {
    self.specs.iter().any(|s| s.worker == worker)
  }

  /// Replaces every worker. Refused whole (nothing changes) when a spec is invalid.
  pub fn set_workers(&mut self, specs: &[WorkerSpec], book: &mut LoadBook) -> Result<(), String> {
    for (i, s) in specs.iter().enumerate() {
      check_spec(s)?;
      if specs[..i].iter().any(|o| o.worker == s.worker) {
        return Err(format!("worker {} is listed twice", s.worker));
      }
    }
    check_total(specs.iter())?;
    self.apply(specs.to_vec(), book);
    Ok(())
  }

  /// Adds a worker, or updates its dp size and capacity when it is already listed.
  pub fn upsert_worker(&mut self, spec: WorkerSpec, book: &mut LoadBook) -> Result<(), String> {
    check_spec(&spec)?;
    let mut specs = self.specs.clone();
    match specs.iter_mut().find(|s| s.worker == spec.worker) {
      Some(s) => *s = spec,
      None => specs.push(spec),
    }
    check_total(specs.iter())?;
    self.apply(specs, book);
    Ok(())
  }

  /// Removes a worker from selection; its bookings stay until freed. False when unknown.
  pub fn remove_worker(&mut self, worker: u64, book: &mut LoadBook) -> bool {
    if !self.contains_worker(worker) {
      return false;
    }
    let specs = self.specs.iter().copied().filter(|s| s.worker != worker).collect();
    self.apply(specs, book);
    true
  }

  fn apply(&mut self, specs: Vec<WorkerSpec>, book: &mut LoadBook) {
    let mut index = FxHashMap::default();
    let mut candidates = Vec::new();
    for s in &specs {
      for dp_rank in 0..s.dp_size {
        let key = WorkerKey { worker: s.worker, dp_rank };
        index.insert(key, candidates.len() as u32);
        candidates.push(Candidate { key, rank: book.list_rank(key), capacity_blocks: s.kv_capacity_blocks, ttft: s.ttft });
      }
    }
    for old in &self.candidates {
      if !index.contains_key(&old.key) {
        book.unlist_rank(old.key);
      }
    }
    self.specs = specs;
    self.candidates = candidates;
    self.index = index;
  }
}

fn check_spec(s: &WorkerSpec) -> Result<(), String> {
  if s.worker > (1u64 << 53) - 1 {
    return Err(format!("worker ids must be integers below 2^53, got {}", s.worker));
  }
  if s.dp_size == 0 || s.dp_size > MAX_DP_SIZE {
    return Err(format!("dpSize must be in 1..={MAX_DP_SIZE}, got {} (worker {})", s.dp_size, s.worker));
  }
  if s.kv_capacity_blocks == Some(0) {
    return Err(format!("kvCapacityBlocks must be at least 1 (worker {})", s.worker));
  }
  if let Some(m) = &s.ttft {
    m.validate().map_err(|e| format!("{e} (worker {})", s.worker))?;
  }
  Ok(())
}

fn check_total<'a>(specs: impl Iterator<Item = &'a WorkerSpec>) -> Result<(), String> {
  let total: usize = specs.map(|s| s.dp_size as usize).sum();
  if total > MAX_CANDIDATES {
    return Err(format!("a pool holds at most {MAX_CANDIDATES} (worker, dpRank) pairs, got {total}"));
  }
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;

  fn spec(worker: u64, dp_size: u32) -> WorkerSpec {
    WorkerSpec { worker, dp_size, kv_capacity_blocks: None, ttft: None }
  }

  #[test]
  fn candidates_follow_listing_order_and_ranks() {
    let mut book = LoadBook::new(4);
    let mut pool = WorkerPool::default();
    pool.set_workers(&[spec(9, 2), spec(3, 1)], &mut book).unwrap();
    let keys: Vec<(u64, u32)> = pool.candidates().iter().map(|c| (c.key.worker, c.key.dp_rank)).collect();
    assert_eq!(keys, vec![(9, 0), (9, 1), (3, 0)]);
    assert_eq!(pool.candidate_index(&WorkerKey { worker: 3, dp_rank: 0 }), Some(2));
    assert_eq!(pool.candidate_index(&WorkerKey { worker: 3, dp_rank: 1 }), None);
  }

  #[test]
  fn invalid_specs_change_nothing() {
    let mut book = LoadBook::new(4);
    let mut pool = WorkerPool::default();
    pool.set_workers(&[spec(1, 1)], &mut book).unwrap();
    assert!(pool.set_workers(&[spec(2, 1), spec(2, 1)], &mut book).unwrap_err().contains("twice"));
    assert!(pool.set_workers(&[spec(2, 0)], &mut book).unwrap_err().contains("dpSize"));
    assert!(pool.upsert_worker(spec(5, MAX_DP_SIZE + 1), &mut book).is_err());
    assert!(pool.upsert_worker(WorkerSpec { worker: 5, dp_size: 1, kv_capacity_blocks: Some(0), ttft: None }, &mut book).is_err());
    let bad = TtftModel { max_batched_tokens: 0, ..TtftModel::default() };
    assert!(pool.upsert_worker(WorkerSpec { worker: 5, dp_size: 1, kv_capacity_blocks: None, ttft: Some(bad) }, &mut book).unwrap_err().contains("worker 5"));
    assert!(pool.set_workers(&[spec(1, MAX_DP_SIZE), spec(2, 1)], &mut book).unwrap_err().contains("at most"));
    assert_eq!(pool.specs(), &[spec(1, 1)]);
  }

  #[test]
  fn upsert_updates_in_place_and_remove_unlists() {
    let mut book = LoadBook::new(4);
    let mut pool = WorkerPool::default();
    pool.set_workers(&[spec(1, 1), spec(2, 1)], &mut book).unwrap();
    pool.upsert_worker(spec(1, 3), &mut book).unwrap();
    assert_eq!(pool.candidates().len(), 4);
    assert_eq!(pool.specs()[0], spec(1, 3));
    assert!(pool.remove_worker(1, &mut book));
    assert!(!pool.remove_worker(1, &mut book));
    assert_eq!(pool.candidates().len(), 1);
    assert_eq!(book.snapshot().len(), 1, "unlisted idle ranks leave the book");
  }
}
