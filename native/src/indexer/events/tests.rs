use super::super::{IndexerConfig, IndexerMode};
use super::*;

fn key(worker: u64) -> WorkerKey {
  WorkerKey { worker, dp_rank: 0 }
}

fn events() -> RadixIndexer {
  RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events))
}

fn matches(ix: &mut RadixIndexer, local: &[u64]) -> Vec<(WorkerKey, u32)> {
  let mut out = Vec::new();
  ix.find_matches_into(local, false, 0.0, &mut out);
  out.sort();
  out
}

#[test]
fn stored_chain_then_child_event_by_engine_parent() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100, 101], &[1, 2], 0.0).unwrap();
  ix.apply_stored(key(1), Some(101), &[102], &[3], 0.0).unwrap();
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 3)]);
  assert_eq!(matches(&mut ix, &[2, 3]), vec![], "a block only matches at its own position");
  ix.check();
}

#[test]
fn rejections_apply_nothing_and_are_counted() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100, 101], &[1, 2], 0.0).unwrap();
  let before = ix.stats();
  assert_eq!(ix.apply_stored(key(1), Some(999), &[102], &[3], 0.0), Err(RejectReason::UnknownParent));
  assert_eq!(ix.apply_stored(key(2), Some(100), &[102], &[3], 0.0), Err(RejectReason::UnknownParent), "parents are per worker");
  assert_eq!(ix.apply_stored(key(1), Some(101), &[102, 101], &[3, 4], 0.0), Err(RejectReason::SelfParent));
  assert_eq!(ix.apply_stored(key(1), Some(101), &[102, 103, 102], &[3, 4, 5], 0.0), Err(RejectReason::DuplicateHash));
  // 100 already names block [1]; reusing it for block [1, 2, 3] is a conflict.
  assert_eq!(ix.apply_stored(key(1), Some(101), &[104, 100], &[3, 4], 0.0), Err(RejectReason::DuplicateHash));
  assert_eq!(ix.apply_stored(key(1), None, &[1], &[1, 2], 0.0), Err(RejectReason::Malformed));
  let after = ix.stats();
  assert_eq!((after.blocks, after.nodes), (before.blocks, before.nodes));
  let r = after.counters.rejected;
  assert_eq!((r.unknown_parent, r.self_parent, r.duplicate_hash, r.malformed), (2, 1, 2, 1));
  assert_eq!(after.counters.events_applied, 1);
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 2)]);
  ix.check();
}

#[test]
fn a_refused_event_gives_back_the_entries_it_claimed() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100, 101], &[1, 2], 0.0).unwrap();
  // Each is refused after some of its hashes were claimed in the slot's table.
  assert_eq!(ix.apply_stored(key(1), Some(999), &[102, 103], &[3, 4], 0.0), Err(RejectReason::UnknownParent));
  assert_eq!(ix.apply_stored(key(1), Some(101), &[102, 103, 100], &[3, 4, 5], 0.0), Err(RejectReason::DuplicateHash));
  // A repeat within the event is found before the unknown parent, as it was by the sort.
  assert_eq!(ix.apply_stored(key(1), Some(999), &[102, 102], &[3, 4], 0.0), Err(RejectReason::DuplicateHash));
  ix.check();
  assert_eq!(ix.apply_removed(key(1), &[102, 103], 0.0), 0, "no claim was left behind");
  ix.apply_stored(key(1), Some(101), &[102, 103], &[3, 4], 0.0).unwrap();
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 4)]);
  // A block already held under another hash of the slot: the new hash is an extra reference.
  ix.apply_stored(key(1), Some(101), &[202], &[3], 0.0).unwrap();
  assert_eq!(ix.apply_removed(key(1), &[102], 0.0), 1);
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 4)], "block [1, 2, 3] stays held by 202");
  assert_eq!(ix.apply_removed(key(1), &[202], 0.0), 1);
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 2)]);
  ix.check();
}

#[test]
fn restoring_the_same_blocks_is_idempotent() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100, 101], &[1, 2], 0.0).unwrap();
  ix.apply_stored(key(1), None, &[100, 101, 102], &[1, 2, 3], 0.0).unwrap();
  assert_eq!(ix.stats().blocks, 3);
  assert_eq!(ix.apply_removed(key(1), &[102, 101, 100], 0.0), 3);
  assert_eq!(ix.stats().nodes, 0);
  ix.check();
}

#[test]
fn two_engine_keys_for_one_block_hold_it_until_both_are_removed() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100], &[1], 0.0).unwrap();
  ix.apply_stored(key(1), None, &[200], &[1], 0.0).unwrap();
  assert_eq!(ix.stats().blocks, 1);
  ix.check();
  assert_eq!(ix.apply_removed(key(1), &[100], 0.0), 1);
  assert_eq!(matches(&mut ix, &[1]), vec![(key(1), 1)]);
  assert_eq!(ix.apply_removed(key(1), &[200], 0.0), 1);
  assert_eq!(matches(&mut ix, &[1]), vec![]);
  assert_eq!(ix.stats().workers, 0);
  ix.check();
}

#[test]
fn removal_keeps_interior_blocks_other_paths_need() {
  let mut ix = events();
  ix.apply_stored(key(1), None, &[100, 101, 102], &[1, 2, 3], 0.0).unwrap();
  ix.apply_stored(key(2), None, &[200, 201], &[1, 2], 0.0).unwrap();
  assert_eq!(ix.apply_removed(key(1), &[101, 555], 0.0), 1);
  assert_eq!(ix.stats().counters.rejected.unknown_removal, 1);
  assert_eq!(matches(&mut ix, &[1, 2, 3]), vec![(key(1), 1), (key(2), 2)]);
  // Worker 1 still holds block 3 under a block it lost: its parent key still works.
  ix.apply_stored(key(1), Some(102), &[103], &[4], 0.0).unwrap();
  ix.apply_cleared(key(2));
  assert_eq!(matches(&mut ix, &[1, 2, 3, 4]), vec![(key(1), 1)]);
  assert_eq!(ix.stats().nodes, 4);
  ix.apply_removed(key(1), &[100, 102, 103], 0.0);
  assert_eq!(ix.stats().nodes, 0);
  ix.check();
}

#[test]
fn approximate_index_refuses_events() {
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Approximate));
  assert_eq!(ix.apply_stored(key(1), None, &[1], &[1], 0.0), Err(RejectReason::WrongMode));
  assert_eq!(ix.apply_removed(key(1), &[1], 0.0), 0);
  assert_eq!(ix.stats().counters.rejected, Default::default());
}

#[test]
fn duplicates_found_in_long_events() {
  let mut v: Vec<u64> = (0..100).collect();
  let mut s = Vec::new();
  assert!(!has_duplicates(&v, &mut s));
  v.push(42);
  assert!(has_duplicates(&v, &mut s));
  assert!(has_duplicates(&[3, 1, 3], &mut s));
}

#[test]
fn duplicates_found_at_every_size_and_place() {
  let mut rng = fastrand::Rng::with_seed(3);
  let mut s = Vec::new();
  for n in 0..150usize {
    // Hashes alike in their high bits (probe collisions), and 0 (no sentinel value).
    let v: Vec<u64> = (0..n as u64).map(|i| i << 40 | rng.u64(..4) << 60).collect();
    let naive = |v: &[u64]| v.iter().enumerate().any(|(i, h)| v[i + 1..].contains(h));
    assert_eq!(has_duplicates(&v, &mut s), naive(&v), "n {n}");
    if n >= 2 {
      let mut w = v.clone();
      let (a, b) = (rng.usize(..n), rng.usize(..n));
      if a != b {
        w[a] = w[b];
        assert!(has_duplicates(&w, &mut s), "n {n}: {a} repeats {b}");
      }
    }
  }
}
