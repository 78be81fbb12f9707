//! The indexer against a plain reference model, on long random operation sequences: same
//! accepted/rejected events, same matches, and the internal invariants after every step.

use std::collections::{BTreeMap, HashMap, HashSet};

use fastrand::Rng;

use super::*;

type Path = Vec<u64>;

/// Events mode as the contract states it: per (worker, rank), engine key -> path of local hashes.
#[derive(Default)]
struct EventsModel {
  held: BTreeMap<WorkerKey, HashMap<u64, Path>>,
}

impl EventsModel {
  fn stored(&mut self, key: WorkerKey, parent: Option<u64>, engine: &[u64], local: &[u64]) -> Result<(), RejectReason> {
    if parent.is_some_and(|p| engine.contains(&p)) {
      return Err(RejectReason::SelfParent);
    }
    if engine.iter().collect::<HashSet<_>>().len() != engine.len() {
      return Err(RejectReason::DuplicateHash);
    }
    let map = self.held.entry(key).or_default();
    let mut path = match parent {
      None => Vec::new(),
      Some(p) => match map.get(&p) {
        Some(path) => path.clone(),
        None => {
          if map.is_empty() {
            self.held.remove(&key);
          }
          return Err(RejectReason::UnknownParent);
        }
      },
    };
    let mut paths = Vec::new();
    for (&e, &l) in engine.iter().zip(local) {
      path.push(l);
      if map.get(&e).is_some_and(|p| *p != path) {
        if map.is_empty() {
          self.held.remove(&key);
        }
        return Err(RejectReason::DuplicateHash);
      }
      paths.push((e, path.clone()));
    }
    map.extend(paths);
    if map.is_empty() {
      self.held.remove(&key);
    }
    Ok(())
  }

  fn removed(&mut self, key: WorkerKey, engine: &[u64]) -> usize {
    let Some(map) = self.held.get_mut(&key) else { return 0 };
    let n = engine.iter().filter(|e| map.remove(e).is_some()).count();
    if map.is_empty() {
      self.held.remove(&key);
    }
    n
  }

  fn matches(&self, local: &[u64]) -> Vec<(WorkerKey, u32)> {
    let mut out = Vec::new();
    for (&key, map) in &self.held {
      let paths: HashSet<&Path> = map.values().collect();
      let n = (1..=local.len()).take_while(|&n| paths.contains(&local[..n].to_vec())).count();
      if n > 0 {
        out.push((key, n as u32));
      }
    }
    out
  }

  fn blocks(&self) -> u64 {
    self.held.values().map(|m| m.values().collect::<HashSet<_>>().len() as u64).sum()
  }
}

fn sorted(mut v: Vec<(WorkerKey, u32)>) -> Vec<(WorkerKey, u32)> {
  v.sort();
  v
}

fn random_key(rng: &mut Rng) -> WorkerKey {
  // Slots beyond 64 too, now and then, to exercise the spill lists.
  let worker = if rng.u8(..) < 8 { 100 + rng.u64(..80) } else { rng.u64(..5) };
  WorkerKey { worker, dp_rank: rng.u32(..2) }
}

fn run_events(seed: u64, steps: usize) {
  let mut rng = Rng::with_seed(seed);
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  let mut model = EventsModel::default();
  for step in 0..steps {
    let key = random_key(&mut rng);
    match rng.u8(..100) {
      0..=54 => {
        let known: Vec<u64> = model.held.get(&key).map(|m| m.keys().copied().collect()).unwrap_or_default();
        let parent = match rng.u8(..10) {
          0..=3 => None,
          4..=8 if !known.is_empty() => Some(known[rng.usize(..known.len())]),
          _ => Some(rng.u64(..60)),
        };
        let n = rng.usize(..6);
        let engine: Vec<u64> = (0..n).map(|_| rng.u64(..60)).collect();
        let local: Vec<u64> = (0..n).map(|_| rng.u64(..3)).collect();
        let got = ix.apply_stored(key, parent, &engine, &local, 0.0);
        let want = model.stored(key, parent, &engine, &local);
        assert_eq!(got.is_ok(), want.is_ok(), "seed {seed} step {step}: stored {key:?} {parent:?} {engine:?} {local:?}: {got:?} vs {want:?}");
      }
      55..=79 => {
        let known: Vec<u64> = model.held.get(&key).map(|m| m.keys().copied().collect()).unwrap_or_default();
        let engine: Vec<u64> =
          (0..rng.usize(1..4)).map(|_| if !known.is_empty() && rng.bool() { known[rng.usize(..known.len())] } else { rng.u64(..60) }).collect();
        let mut dedup = engine.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(ix.apply_removed(key, &dedup, 0.0), model.removed(key, &dedup), "seed {seed} step {step}: removed");
      }
      80..=83 => {
        ix.apply_cleared(key);
        model.held.remove(&key);
      }
      84..=85 => {
        ix.remove_worker(key.worker);
        model.held.retain(|k, _| k.worker != key.worker);
      }
      _ => {
        let local: Vec<u64> = (0..rng.usize(..7)).map(|_| rng.u64(..3)).collect();
        let mut out = Vec::new();
        ix.find_matches_into(&local, false, 0.0, &mut out);
        assert_eq!(sorted(out), model.matches(&local), "seed {seed} step {step}: matches {local:?}");
      }
    }
    ix.check();
    assert_eq!(ix.stats().blocks, model.blocks(), "seed {seed} step {step}: blocks");
  }
  // A snapshot of whatever state was reached restores to the same index.
  let mut copy = RadixIndexer::restore(&ix.snapshot()).unwrap();
  copy.check();
  for a in 0..3 {
    for b in 0..3 {
      let q = [a, b, 0, 1];
      let (mut x, mut y) = (Vec::new(), Vec::new());
      ix.find_matches_into(&q, false, 0.0, &mut x);
      copy.find_matches_into(&q, false, 0.0, &mut y);
      assert_eq!(sorted(x), sorted(y));
    }
  }
}

#[test]
fn events_mode_agrees_with_the_reference_model() {
  for seed in 0..24 {
    run_events(seed, 1500);
  }
}

#[test]
fn approximate_mode_agrees_with_a_timed_model() {
  const TTL: f64 = 50.0;
  for seed in 0..12u64 {
    let mut rng = Rng::with_seed(seed);
    let mut cfg = IndexerConfig::new(4, IndexerMode::Approximate);
    cfg.ttl_ms = TTL;
    let mut ix = RadixIndexer::new(cfg);
    let mut model: BTreeMap<WorkerKey, HashMap<Path, f64>> = BTreeMap::new();
    let mut now = 0.0;
    for step in 0..1500 {
      now += rng.u8(..6) as f64;
      model.retain(|_, m| {
        m.retain(|_, t| *t + TTL > now);
        !m.is_empty()
      });
      let key = random_key(&mut rng);
      let local: Vec<u64> = (0..rng.usize(..6)).map(|_| rng.u64(..3)).collect();
      match rng.u8(..10) {
        0..=4 => {
          ix.record_routing(key, &local, now);
          for n in 1..=local.len() {
            let t = model.entry(key).or_default().entry(local[..n].to_vec()).or_insert(now);
            *t = t.max(now);
          }
        }
        5 => {
          ix.remove_worker(key.worker);
          model.retain(|k, _| k.worker != key.worker);
        }
        _ => {
          let mut out = Vec::new();
          ix.find_matches_into(&local, false, now, &mut out);
          let want: Vec<_> = model
            .iter()
            .filter_map(|(&k, paths)| {
              let n = (1..=local.len()).take_while(|&n| paths.contains_key(&local[..n])).count();
              (n > 0).then_some((k, n as u32))
            })
            .collect();
          assert_eq!(sorted(out), want, "seed {seed} step {step}");
        }
      }
      ix.expire(now);
      ix.check();
      assert_eq!(ix.stats().blocks, model.values().map(|m| m.len() as u64).sum::<u64>(), "seed {seed} step {step}");
    }
  }
}

#[test]
fn early_exit_counts_are_exact_or_a_lower_bound_for_the_last_candidate() {
  let mut rng = Rng::with_seed(7);
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  for w in 0..20u64 {
    let n = rng.usize(1..12);
    let engine: Vec<u64> = (0..n as u64).map(|i| w * 100 + i).collect();
    let local: Vec<u64> = (0..n).map(|i| if i < 3 { 1 } else { rng.u64(..2) }).collect();
    ix.apply_stored(WorkerKey { worker: w, dp_rank: 0 }, None, &engine, &local, 0.0).unwrap();
  }
  for _ in 0..200 {
    let q: Vec<u64> = (0..12).map(|i| if i < 3 { 1 } else { rng.u64(..2) }).collect();
    let (mut exact, mut early) = (Vec::new(), Vec::new());
    ix.find_matches_into(&q, false, 0.0, &mut exact);
    ix.find_matches_into(&q, true, 0.0, &mut early);
    let exact: HashMap<_, _> = exact.into_iter().collect();
    let best = exact.values().copied().max().unwrap_or(0);
    let mut lower = 0;
    for &(k, n) in &early {
      let e = exact[&k];
      if n != e {
        assert!(n < e, "a count above the exact one");
        lower += 1;
      }
    }
    assert!(lower <= 1, "only the last candidate may be a lower bound");
    assert_eq!(early.len(), exact.len());
    // Whoever is best under early exit is a best worker.
    let top = early.iter().max_by_key(|(_, n)| *n).map(|(k, _)| exact[k]).unwrap_or(0);
    assert_eq!(top, best);
  }
}
