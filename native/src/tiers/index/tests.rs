use super::*;
use crate::hash::sequence_hashes;

fn key(worker: u64) -> WorkerKey {
  WorkerKey { worker, dp_rank: 0 }
}

/// Local hashes 1..=n and their sequence hashes.
fn prompt(n: u64) -> (Vec<u64>, Vec<u64>) {
  let local: Vec<u64> = (1..=n).collect();
  let seq = sequence_hashes(&local);
  (local, seq)
}

fn ext(ix: &LowerTierIndex, seq: &[u64], device: &[(WorkerKey, u32)]) -> Vec<(WorkerKey, [u32; LOWER_TIERS])> {
  let mut out = Vec::new();
  ix.extensions_into(seq, device, &mut out);
  let mut v: Vec<_> = out.into_iter().map(|(k, e)| (k, e.blocks)).collect();
  v.sort_by_key(|(k, _)| k.worker);
  v
}

#[test]
fn a_prefix_on_host_extends_past_the_device_prefix() {
  let (local, seq) = prompt(4);
  let mut ix = LowerTierIndex::default();
  ix.store(key(1), LowerTier::Host, None, &[10, 11, 12, 13], &local).unwrap();
  assert_eq!(ix.held(), [4, 0, 0]);
  assert_eq!(ext(&ix, &seq, &[]), vec![(key(1), [4, 0, 0])]);
  // Two blocks on the device: two left to reload.
  assert_eq!(ext(&ix, &seq, &[(key(1), 2)]), vec![(key(1), [2, 0, 0])]);
  // The whole prompt on the device: nothing to reload, the worker is left out.
  assert_eq!(ext(&ix, &seq, &[(key(1), 4)]), vec![]);
}

#[test]
fn a_tail_stored_under_a_device_parent_chains_from_its_sequence_hash() {
  let (local, seq) = prompt(4);
  let mut ix = LowerTierIndex::default();
  // Blocks 2 and 3 offloaded to disk, their parent (block 1) still on the device.
  ix.store(key(1), LowerTier::Disk, Some(seq[1]), &[12, 13], &local[2..]).unwrap();
  assert_eq!(ix.sequence_hash_of(key(1), 13), Some(seq[3]));
  assert_eq!(ext(&ix, &seq, &[(key(1), 2)]), vec![(key(1), [0, 2, 0])]);
  // Without the device prefix, the hole at the head stops the extension.
  assert_eq!(ext(&ix, &seq, &[]), vec![]);
}

#[test]
fn each_block_counts_once_at_its_nearest_tier() {
  let (local, seq) = prompt(3);
  let mut ix = LowerTierIndex::default();
  ix.store(key(1), LowerTier::External, None, &[10, 11, 12], &local).unwrap();
  ix.store(key(1), LowerTier::Host, None, &[10], &local[..1]).unwrap();
  ix.store(key(2), LowerTier::Disk, None, &[20, 21], &local[..2]).unwrap();
  assert_eq!(ix.held(), [1, 2, 3]);
  assert_eq!(ext(&ix, &seq, &[]), vec![(key(1), [1, 0, 2]), (key(2), [0, 2, 0])]);
  // Storing what is already held changes nothing.
  ix.store(key(1), LowerTier::Host, None, &[10], &local[..1]).unwrap();
  assert_eq!(ix.held(), [1, 2, 3]);
}

#[test]
fn removal_is_per_tier_and_forgets_emptied_workers() {
  let (local, seq) = prompt(2);
  let mut ix = LowerTierIndex::default();
  ix.store(key(1), LowerTier::Host, None, &[10, 11], &local).unwrap();
  ix.store(key(1), LowerTier::Disk, None, &[10, 11], &local).unwrap();
  // A removal on disk leaves host's copy; unknown hashes and other tiers' are not counted.
  assert_eq!(ix.remove(key(1), LowerTier::Disk, &[11, 99]), 1);
  assert_eq!(ix.remove(key(1), LowerTier::External, &[10]), 0);
  assert_eq!(ix.held(), [2, 1, 0]);
  assert_eq!(ext(&ix, &seq, &[]), vec![(key(1), [2, 0, 0])]);
  assert_eq!(ix.remove(key(1), LowerTier::Host, &[10, 11]), 2);
  assert_eq!(ix.remove(key(1), LowerTier::Disk, &[10]), 1);
  assert_eq!(ix.held(), [0, 0, 0]);
  assert!(ix.is_empty());
  assert_eq!(ix.remove(key(7), LowerTier::Host, &[10]), 0);
}

#[test]
fn refusals_change_nothing() {
  let (local, _) = prompt(2);
  let mut ix = LowerTierIndex::default();
  assert_eq!(ix.store(key(1), LowerTier::Host, None, &[10], &local), Err(RejectReason::Malformed));
  ix.store(key(1), LowerTier::Host, None, &[10, 11], &local).unwrap();
  // Engine hash 11 reused for another block: refused whole, 12 not stored either.
  assert_eq!(ix.store(key(1), LowerTier::Disk, None, &[12, 11], &[7, 8]), Err(RejectReason::HashCollision));
  assert_eq!(ix.held(), [2, 0, 0]);
  assert_eq!(ix.sequence_hash_of(key(1), 12), None);
}

#[test]
fn clear_and_remove_worker_drop_every_tier() {
  let (local, _) = prompt(2);
  let mut ix = LowerTierIndex::default();
  let rank1 = WorkerKey { worker: 1, dp_rank: 1 };
  ix.store(key(1), LowerTier::Host, None, &[10, 11], &local).unwrap();
  ix.store(rank1, LowerTier::Disk, None, &[10], &local[..1]).unwrap();
  ix.store(key(2), LowerTier::External, None, &[10], &local[..1]).unwrap();
  ix.clear(key(1));
  assert_eq!(ix.held(), [0, 1, 1]);
  ix.remove_worker(1);
  assert_eq!(ix.held(), [0, 0, 1]);
  ix.remove_worker(2);
  assert!(ix.is_empty());
  assert_eq!(ix.bytes(), 0);
}
