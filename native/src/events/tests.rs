use super::apply::{apply_batch, BatchOutcome};
use super::decode::{DecodeError, Decoded, Record, Shape};
use super::fields::fold_digest;
use crate::hash::{block_seed, hash_block, BlockHasher, Window, HASH_SEED};
use crate::indexer::{IndexerConfig, IndexerMode, RadixIndexer, WorkerKey};

/// Hex with spaces and "quoted" strings, as PROTOCOLS.md writes payload bytes.
fn bytes(spec: &str) -> Vec<u8> {
  let mut out = Vec::new();
  let mut rest = spec;
  while !rest.is_empty() {
    rest = rest.trim_start();
    if let Some(r) = rest.strip_prefix('"') {
      let end = r.find('"').unwrap();
      out.extend_from_slice(&r.as_bytes()[..end]);
      rest = &r[end + 1..];
    } else {
      let end = rest.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(rest.len());
      let hex = &rest[..end];
      for i in (0..hex.len()).step_by(2) {
        out.push(u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
      }
      rest = &rest[end..];
    }
  }
  out
}

const MAP_EVENT: &str = r#"93 cb41da305498100000 91 8a a4"type" ab"BlockStored" ac"block_hashes" 91 cfdeadbeef12345678
  b1"parent_block_hash" c0 a9"token_ids" 94 01020304 aa"block_size" 04 a7"lora_id" c0 a6"medium"
  a3"GPU" a9"lora_name" c0 a9"group_idx" 00 b2"kv_cache_spec_kind" ae"full_attention""#;
const POSITIONAL: &str = r#"93 cb41da305498100000 91 97 ab"BlockStored" 91 cfdeadbeef12345678 c0 94 01020304 04 c0 a3"GPU""#;

const SHAPE4: Shape = Shape { block_size: 4, window: Window::Plain, lower_tiers: true };

fn decode(payload: &[u8]) -> Result<Decoded, DecodeError> {
  let mut d = Decoded::default();
  d.decode(payload, SHAPE4).map(|()| d)
}

/// Each record with its engine hashes.
fn events_of(payload: &[u8]) -> Vec<(Record, Vec<u64>)> {
  let d = decode(payload).unwrap();
  d.records
    .iter()
    .map(|&r| {
      let hashes = match r {
        Record::Stored { engine, .. } | Record::Removed { engine, .. } => engine.of(&d.engine).to_vec(),
        _ => Vec::new(),
      };
      (r, hashes)
    })
    .collect()
}

fn invalid_path(payload: &[u8]) -> String {
  decode(payload).unwrap().first_invalid.unwrap().path
}

#[test]
fn the_protocol_examples_decode_alike() {
  for spec in [MAP_EVENT.to_string() + " 00", POSITIONAL.to_string() + " 00"] {
    let payload = bytes(&spec);
    let d = decode(&payload).unwrap();
    assert_eq!((d.events(), d.dp_rank), (1, Some(0)));
    assert!((d.ts - 1_757_000_000.0).abs() < 1e6);
    assert_eq!(d.engine, vec![0xdead_beef_1234_5678]);
    assert_eq!(d.local, vec![hash_block(&[1, 2, 3, 4], HASH_SEED)]);
    assert!(matches!(d.records[0], Record::Stored { parent: None, local_at: 0, .. }));
  }
}

#[test]
fn batches_as_maps_old_arrays_and_rank_aliases() {
  // {"ts": 1, "events": [["AllBlocksCleared"]], "dp_rank": 3}
  let map = bytes(r#"83 a2"ts" 01 a6"events" 91 91 b0"AllBlocksCleared" a7"dp_rank" 03"#);
  let b = decode(&map).unwrap();
  assert_eq!((b.ts, b.events(), b.dp_rank), (1.0, 1, Some(3)));
  assert_eq!(b.records, vec![Record::Cleared]);
  // Old SGLang: [ts, events], no rank.
  assert_eq!(decode(&bytes("92 01 90")).unwrap().dp_rank, None);
  // Extra trailing elements of the batch are ignored.
  assert_eq!(decode(&bytes("94 01 90 c0 07")).unwrap().events(), 0);
  // The events before the timestamp, and a repeated events key (the last one counts).
  let map = bytes(r#"83 a6"events" 92 91 b0"AllBlocksCleared" 91 a3"Foo" a6"events" 91 91 a3"Foo" a2"ts" 02"#);
  let b = decode(&map).unwrap();
  assert_eq!((b.ts, b.records.clone()), (2.0, vec![Record::Unknown]));
}

#[test]
fn hashes_are_exact_ints_int64_bits_and_folded_bytes() {
  // BlockRemoved with [uint64, int64 -2, bytes of 10 (last 8 folded)], positional.
  let payload = bytes(r#"92 01 91 92 ac"BlockRemoved" 93 cfffffffffffffffff d3fffffffffffffffe c40a 0102030405060708090a"#);
  let ev = events_of(&payload);
  assert_eq!(ev[0].1, vec![u64::MAX, u64::MAX - 1, fold_digest(&[3, 4, 5, 6, 7, 8, 9, 10])]);
  assert!(matches!(ev[0].0, Record::Removed { .. }));
  assert_eq!(fold_digest(&[3, 4, 5, 6, 7, 8, 9, 10]), 0x0304_0506_0708_090a);
}

#[test]
fn malformed_payloads_are_refused_whole_and_bad_events_alone() {
  for bad in ["", "c1", "93 01", "92 01 90 00", "01", "91 01", "92 c0 90", "92 01 01", "93 01 90 ce 00010000", "dd ffffffff"] {
    assert!(decode(&bytes(bad)).is_err(), "{bad}");
  }
  let e = decode(&bytes("92 a1\"x\" 90")).unwrap_err();
  assert_eq!(e.path, "ts");
  // A token id over 2^32 - 1, in the second event: that event alone is refused.
  let payload = bytes(r#"92 01 92 91 b0"AllBlocksCleared" 95 ab"BlockStored" 90 c0 91 cf0000000100000000 04"#);
  let d = decode(&payload).unwrap();
  assert_eq!(d.records, vec![Record::Cleared, Record::Invalid { first: true }]);
  assert_eq!(d.first_invalid.unwrap().path, "events[1].token_ids[0]");
  // Unknown types are skipped, secondary groups too; trailing event fields ignored.
  let payload = bytes(r#"92 01 93 91 a3"Foo" 95 ac"BlockRemoved" 90 c0 01 07 96 ac"BlockRemoved" 90 c0 00 c0 ff"#);
  let ev: Vec<_> = events_of(&payload).into_iter().map(|e| e.0).collect();
  assert_eq!(ev, vec![Record::Unknown, Record::OtherGroup, Record::Removed { engine: super::decode::Span { start: 0, end: 0 }, tier: None }]);
}

#[test]
fn extra_keys_give_the_multimodal_digests_per_block() {
  let digest = "00000000000000ff".to_string() + &"a".repeat(48);
  // extra_keys: [[digest, "lora-x"], nil, [[digest, 3]]]
  let spec =
    format!(r#"92 01 91 99 ab"BlockStored" 93 01 02 03 c0 9c {} 04 c0 c0 c0 93 92 d940"{digest}" a6"lora-x" c0 91 92 d940"{digest}" 03"#, "01 ".repeat(12));
  let payload = bytes(&spec);
  let d = decode(&payload).unwrap();
  assert!(matches!(d.records[0], Record::Stored { .. }));
  let t: Vec<u32> = vec![1; 12];
  let mm = crate::hash::MmBlocks::new(&[0, 1, 1, 2], &[255, 255]).unwrap();
  assert_eq!(d.local, BlockHasher::new(4, HASH_SEED).multimodal(Some(mm)).hashes(&t));
  assert_ne!(d.local[0], hash_block(&t[..4], HASH_SEED));
}

fn key(worker: u64) -> WorkerKey {
  WorkerKey { worker, dp_rank: 0 }
}

#[test]
fn a_batch_applies_with_counts_per_outcome_and_medium() {
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  // stored [1,2,3,4] as 10; stored on CPU; stored on TAPE (unknown); removed 10 and unknown 99;
  // stored with block size 8; stored with 3 tokens for a block of 4.
  let payload = bytes(
    r#"93 01 96
     95 ab"BlockStored" 91 0a c0 94 01020304 04
     97 ab"BlockStored" 91 0b c0 94 05060708 04 c0 a3"CPU"
     97 ab"BlockStored" 91 0e c0 94 05060708 04 c0 a4"TAPE"
     93 ac"BlockRemoved" 92 0a 63 a3"gpu"
     95 ab"BlockStored" 91 0c c0 94 01020304 08
     95 ab"BlockStored" 91 0d c0 93 010203 04
     02"#,
  );
  let out = apply_batch(&mut ix, key(1), &payload, &mut Decoded::default()).unwrap();
  let mut lower_tiers = [super::apply::TierCount::default(); crate::tiers::LOWER_TIERS];
  lower_tiers[crate::tiers::LowerTier::Host as usize].stored = 1;
  let want = BatchOutcome {
    events: 6,
    stored: 1,
    removed: 1,
    lower_tiers,
    ts: 1.0,
    dp_rank: Some(2),
    other_media: vec![super::apply::MediumCount { medium: "TAPE".into(), stored: 1, removed: 0 }],
    refused: super::apply::Refused { block_size: 1, token_count: 1, unknown_removal: 1, ..Default::default() },
    ..Default::default()
  };
  assert_eq!(out, want);
  assert_eq!(out.applied(), 3);
  assert_eq!(ix.stats().blocks, 0, "stored then removed");
  assert_eq!(ix.lower_tiers().held(), [1, 0, 0]);

  // An index that does not keep lower tiers counts the CPU event as another medium.
  let mut device_only = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  device_only.set_lower_tiers(false);
  let out = apply_batch(&mut device_only, key(1), &payload, &mut Decoded::default()).unwrap();
  assert_eq!(out.lower_tiers, [super::apply::TierCount::default(); crate::tiers::LOWER_TIERS]);
  let media: Vec<&str> = out.other_media.iter().map(|m| m.medium.as_str()).collect();
  assert_eq!(media, ["CPU", "TAPE"]);
  assert_eq!(device_only.lower_tiers().held(), [0, 0, 0]);
}

#[test]
fn offload_events_leave_the_device_view_as_it_was() {
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  let local = BlockHasher::new(4, HASH_SEED).hashes(&[1, 2, 3, 4, 5, 6, 7, 8]);
  let matches = |ix: &mut RadixIndexer| {
    let mut out = Vec::new();
    ix.find_matches_into(&local, false, 0.0, &mut out);
    out
  };
  // Blocks 10, 11 on the GPU; block 11 copied to the CPU under the same engine hash (vLLM's
  // offload keeps it), then dropped from the CPU: the GPU still serves both.
  apply_batch(&mut ix, key(1), &bytes(r#"93 01 91 95 ab"BlockStored" 92 0a 0b c0 98 0102030405060708 04 c0"#), &mut Decoded::default()).unwrap();
  apply_batch(
    &mut ix,
    key(1),
    &bytes(r#"93 01 92 97 ab"BlockStored" 91 0b 0a 94 05060708 04 c0 a3"CPU" 93 ac"BlockRemoved" 91 0b a3"cpu" 02"#),
    &mut Decoded::default(),
  )
  .unwrap();
  assert_eq!(matches(&mut ix), vec![(key(1), 2)]);
  assert_eq!(ix.lower_tiers().held(), [0, 0, 0]);
  // Offloaded again, then evicted from the GPU: the device view loses it, the host keeps it.
  let out = apply_batch(
    &mut ix,
    key(1),
    &bytes(r#"93 01 92 97 ab"BlockStored" 91 0b 0a 94 05060708 04 c0 a3"CPU" 93 ac"BlockRemoved" 91 0b a3"GPU" 02"#),
    &mut Decoded::default(),
  )
  .unwrap();
  assert_eq!((out.lower_tiers[0].stored, out.removed), (1, 1));
  assert_eq!(matches(&mut ix), vec![(key(1), 1)]);
  let seq = crate::hash::sequence_hashes(&local);
  let mut ext = Vec::new();
  let device = matches(&mut ix);
  ix.lower_extensions_into(&seq, &device, &mut ext);
  assert_eq!(ext.len(), 1);
  assert_eq!(ext[0].1.blocks, [1, 0, 0]);
  // AllBlocksCleared drops both views of the worker.
  apply_batch(&mut ix, key(1), &bytes(r#"93 01 91 91 b0"AllBlocksCleared" 02"#), &mut Decoded::default()).unwrap();
  assert_eq!(matches(&mut ix), vec![]);
  assert_eq!(ix.lower_tiers().held(), [0, 0, 0]);
}

#[test]
fn stored_tokens_are_hashed_with_the_lora_seed_and_the_window() {
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  let payload = bytes(r#"92 01 91 98 ab"BlockStored" 91 0a c0 94 01020304 04 c0 c0 a1"L""#);
  apply_batch(&mut ix, key(1), &payload, &mut Decoded::default()).unwrap();
  let mut out = Vec::new();
  ix.find_matches_into(&[hash_block(&[1, 2, 3, 4], block_seed(Some("L"), None))], false, 0.0, &mut out);
  assert_eq!(out, vec![(key(1), 1)]);
  let mut cfg = IndexerConfig::new(4, IndexerMode::Events);
  cfg.window = crate::hash::Window::Eagle;
  let mut eagle = RadixIndexer::new(cfg);
  let payload = bytes(r#"92 01 91 95 ab"BlockStored" 91 0a c0 95 0102030405 04"#);
  assert_eq!(apply_batch(&mut eagle, key(1), &payload, &mut Decoded::default()).unwrap().stored, 1);
  let local = BlockHasher::new(4, HASH_SEED).window(crate::hash::Window::Eagle).hashes(&[1, 2, 3, 4, 5, 6]);
  eagle.find_matches_into(&local, false, 0.0, &mut out);
  assert_eq!(out, vec![(key(1), 1)]);
}

#[test]
fn map_events_with_keys_of_other_types_and_batches_with_trailing_fields() {
  // {1: "x", "type": "AllBlocksCleared"} in [ts, [event], dp, extra]
  let payload = bytes(r#"94 01 91 82 01 a1"x" a4"type" b0"AllBlocksCleared" 05 c0"#);
  let b = decode(&payload).unwrap();
  assert_eq!(b.dp_rank, Some(5));
  assert_eq!(b.records, vec![Record::Cleared]);
}

#[test]
#[ignore]
fn decode_speed() {
  // 32 stored events of 32 blocks x 16 tokens (uint16/uint32 ids), as the bench suite's.
  let mut p = vec![0x93, 0x01, 0xdc, 0x00, 32];
  for e in 0..32u64 {
    p.extend_from_slice(&[0x95, 0xab]);
    p.extend_from_slice(b"BlockStored");
    p.extend_from_slice(&[0xdc, 0, 32]);
    for j in 0..32u64 {
      p.push(0xcf);
      p.extend_from_slice(&(e * 32 + j + 1).to_be_bytes());
    }
    p.push(0xc0);
    p.extend_from_slice(&[0xdd, 0, 0, 2, 0]);
    for t in 0..512u32 {
      let v = (t * 7919 + e as u32) % 150_000;
      p.push(0xce);
      p.extend_from_slice(&v.to_be_bytes());
    }
    p.push(0x10);
  }
  p.push(0x00);
  let shape = Shape { block_size: 16, window: Window::Plain, lower_tiers: true };
  let mut d = Decoded::default();
  let t = std::time::Instant::now();
  for _ in 0..100 {
    d.decode(&p, shape).unwrap();
  }
  println!("decode and hash: {:.2} us per event", t.elapsed().as_secs_f64() * 1e6 / 3200.0);
  let t = std::time::Instant::now();
  for r in 0..100 {
    let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
    let out = apply_batch(&mut ix, key(r), &p, &mut d).unwrap();
    assert_eq!(out.stored, 32);
  }
  println!("decode + hash + apply: {:.2} us per event", t.elapsed().as_secs_f64() * 1e6 / 3200.0);
}

#[test]
fn a_batch_that_goes_wrong_after_its_events_applies_none_of_them() {
  // The events are decoded (and hashed) before the end of the payload is reached: what comes
  // after them still decides whether any applies.
  let stored = r#"95 ab"BlockStored" 91 0a c0 94 01020304 04"#;
  let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
  let mut d = Decoded::default();
  for bad in [
    format!("93 01 91 {stored} 00 00"),                                      // a byte after the batch
    format!("93 01 91 {stored} cd 00"),                                      // cut in the dp rank
    format!("93 01 92 {stored} 95"),                                         // cut in the second event
    format!(r#"82 a6"events" 91 {stored} a2"ts" a1"x""#),                    // the timestamp after the events is bad
    format!(r#"83 a6"events" 91 {stored} a2"ts" 01 a7"dp_rank" cd ffff00"#), // a bad rank, then a byte
    format!("93 01 91 {stored} ce 00010000"),                                // a rank out of range
  ] {
    assert!(apply_batch(&mut ix, key(1), &bytes(&bad), &mut d).is_err(), "{bad}");
    assert_eq!((ix.stats().blocks, ix.stats().counters.events_applied), (0, 0), "{bad}");
  }
  assert_eq!(apply_batch(&mut ix, key(1), &bytes(&format!("93 01 91 {stored} 00")), &mut d).unwrap().stored, 1);
}

#[test]
fn invalid_fields_are_reported_with_their_paths_in_both_event_forms() {
  // Positional: a hash of the wrong type (the second of the list), a block size of 0.
  assert_eq!(invalid_path(&bytes(r#"92 01 91 95 ab"BlockStored" 92 01 a1"x" c0 94 01020304 04"#)), "events[0].block_hashes[1]");
  assert_eq!(invalid_path(&bytes(r#"92 01 91 95 ab"BlockStored" 91 01 c0 94 01020304 00"#)), "events[0].block_size");
  // As maps: token ids that are not a list, a removal without hashes, a parent of the wrong type.
  assert_eq!(
    invalid_path(&bytes(r#"92 01 92 91 b0"AllBlocksCleared" 84 a4"type" ab"BlockStored" ac"block_hashes" 91 01 a9"token_ids" a1"x" aa"block_size" 04"#)),
    "events[1].token_ids"
  );
  assert_eq!(invalid_path(&bytes(r#"92 01 91 81 a4"type" ac"BlockRemoved""#)), "events[0].block_hashes");
  let parent = bytes(r#"92 01 91 85 a4"type" ab"BlockStored" ac"block_hashes" 91 01 b1"parent_block_hash" c3 a9"token_ids" 94 01020304 aa"block_size" 04"#);
  assert_eq!(invalid_path(&parent), "events[0].parent_block_hash");
}

#[test]
fn a_reused_decoder_lets_go_of_a_large_batch_buffers() {
  let event = r#"95 ab"BlockStored" 91 0a c0 94 01020304 04"#;
  let mut d = Decoded::default();
  d.decode(&bytes(&format!("92 01 91 {event}")), SHAPE4).unwrap();
  d.release_large();
  assert!(d.engine.capacity() > 0, "a small batch's buffers are kept");
  // 70k events of one block each: 140k hashes, past what is kept.
  let mut big = bytes("92 01 dd 00011170");
  let one = bytes(event);
  for _ in 0..70_000 {
    big.extend_from_slice(&one);
  }
  d.decode(&big, SHAPE4).unwrap();
  assert_eq!(d.events(), 70_000);
  d.release_large();
  assert_eq!((d.engine.capacity(), d.local.capacity(), d.records.capacity()), (0, 0, 0));
}
