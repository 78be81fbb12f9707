use super::*;

fn key(worker: u64, dp_rank: u32) -> WorkerKey {
  WorkerKey { worker, dp_rank }
}

fn matches(ix: &mut RadixIndexer, local: &[u64], now: f64) -> Vec<(WorkerKey, u32)> {
  let mut out = Vec::new();
  ix.find_matches_into(local, false, now, &mut out);
  out.sort();
  out
}

fn sample_events(capped: bool) -> RadixIndexer {
  let mut cfg = IndexerConfig::new(16, IndexerMode::Events);
  cfg.max_blocks = capped.then_some(100);
  let mut ix = RadixIndexer::new(cfg);
  ix.apply_stored(key(1, 0), None, &[10, 11, 12], &[1, 2, 3], 0.0).unwrap();
  ix.apply_stored(key(2, 3), None, &[20, 21], &[1, 2], 0.0).unwrap();
  ix.apply_stored(key(2, 3), Some(21), &[22], &[7], 0.0).unwrap();
  ix.apply_stored(key(2, 3), None, &[23], &[1], 0.0).unwrap(); // a second key for block [1]
  ix.apply_removed(key(1, 0), &[11], 0.0);
  ix
}

#[test]
fn events_round_trip_keeps_matches_keys_and_config() {
  for capped in [false, true] {
    let mut a = sample_events(capped);
    let mut b = RadixIndexer::restore(&a.snapshot()).unwrap();
    b.check();
    assert_eq!(b.config(), a.config());
    for q in [&[1u64, 2, 3][..], &[1, 2, 7], &[1]] {
      assert_eq!(matches(&mut b, q, 0.0), matches(&mut a, q, 0.0));
    }
    // Engine keys survive: removals and children by parent key work on the copy.
    b.apply_stored(key(1, 0), Some(12), &[13], &[4], 0.0).unwrap();
    assert_eq!(b.apply_removed(key(2, 3), &[20, 22], 0.0), 2);
    assert_eq!(matches(&mut b, &[1, 2, 7], 0.0), vec![(key(1, 0), 1), (key(2, 3), 2)]);
    assert_eq!(b.apply_removed(key(2, 3), &[23], 0.0), 1);
    assert_eq!(matches(&mut b, &[1, 2, 7], 0.0), vec![(key(1, 0), 1)]);
    b.check();
    assert_eq!(b.snapshot().len(), b.snapshot().len());
  }
}

#[test]
fn approximate_round_trip_keeps_times() {
  let mut cfg = IndexerConfig::new(16, IndexerMode::Approximate);
  cfg.ttl_ms = 100.0;
  let mut a = RadixIndexer::new(cfg);
  a.record_routing(key(1, 0), &[1, 2, 3], 0.0);
  a.record_routing(key(5, 1), &[1, 2], 50.0);
  let mut b = RadixIndexer::restore(&a.snapshot()).unwrap();
  b.check();
  assert_eq!(b.mode(), IndexerMode::Approximate);
  assert_eq!(matches(&mut b, &[1, 2, 3], 99.0), vec![(key(1, 0), 3), (key(5, 1), 2)]);
  assert_eq!(matches(&mut b, &[1, 2, 3], 100.0), vec![(key(5, 1), 2)]);
  assert_eq!(b.expire(150.0), 2);
}

#[test]
fn empty_index_round_trips() {
  let a = RadixIndexer::new(IndexerConfig::new(32, IndexerMode::Events));
  let b = RadixIndexer::restore(&a.snapshot()).unwrap();
  assert_eq!(b.block_size(), 32);
  assert_eq!(b.stats().nodes, 0);
}

#[test]
fn refuses_damaged_bytes_without_panicking() {
  let good = sample_events(true).snapshot();
  for len in 0..good.len() {
    assert!(RadixIndexer::restore(&good[..len]).is_err(), "truncated to {len}");
  }
  let mut flipped = good.clone();
  flipped[40] ^= 1;
  assert!(RadixIndexer::restore(&flipped).unwrap_err().contains("checksum"));
  let mut magic = good.clone();
  magic[0] = b'X';
  assert!(RadixIndexer::restore(&magic).unwrap_err().contains("magic"));
  let mut version = good.clone();
  version[8] = 9;
  assert!(RadixIndexer::restore(&version).unwrap_err().contains("version 9"));
}

/// Payloads with a valid checksum but invalid content (as a buggy or hostile writer would make).
#[test]
fn refuses_invalid_content_behind_a_valid_checksum() {
  let reseal = |mut bytes: Vec<u8>| {
    bytes.truncate(bytes.len() - 8);
    let sum = xxh3_64(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
  };
  let good = sample_events(false).snapshot();
  let body = HEADER;
  // Mode byte 7.
  let mut b = good.clone();
  b[body + 4] = 7;
  assert!(RadixIndexer::restore(&reseal(b)).unwrap_err().contains("mode"));
  // Block size 0.
  let mut b = good.clone();
  b[body..body + 4].copy_from_slice(&0u32.to_le_bytes());
  assert!(RadixIndexer::restore(&reseal(b)).unwrap_err().contains("blockSize"));
  // Every byte position mutated in turn: refused or accepted, never a panic, and an accepted
  // index is consistent.
  for at in HEADER..good.len() - 8 {
    for delta in [1u8, 0x80, 0xff] {
      let mut b = good.clone();
      b[at] = b[at].wrapping_add(delta);
      if let Ok(ix) = RadixIndexer::restore(&reseal(b)) {
        ix.check();
      }
    }
  }
}
