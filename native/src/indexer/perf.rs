//! A quick local measurement of the headline figures (the real benchmark is bench/, run by
//! `npm run bench`): find_matches_into p50/p99 for 8k-token prompts (512 blocks) with 1M
//! (worker, block) entries over 64 workers, and bytes per entry. Ignored by default:
//!   cargo test --release --manifest-path native/Cargo.toml indexer::perf -- --ignored --nocapture

use std::time::Instant;

use fastrand::Rng;

use super::*;

const WORKERS: u64 = 64;
const BLOCKS: usize = 512;
const ENTRIES: usize = 1 << 20;

fn pct(sorted: &[f64], p: f64) -> f64 {
  sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// `documents` distinct 512-block sequences, each stored on enough workers to reach 1M
/// entries; then prompts that follow a random document for a random number of blocks.
/// `chunk`: blocks per stored event; the events of all documents are interleaved, so a
/// document's chunks get distant node ids (as when many requests' blocks are stored step by step).
fn scenario(name: &str, documents: usize, early_exit: bool) {
  scenario_chunked(name, documents, early_exit, BLOCKS)
}

fn scenario_chunked(name: &str, documents: usize, early_exit: bool, chunk: usize) {
  let mut rng = Rng::with_seed(42);
  let docs: Vec<Vec<u64>> = (0..documents).map(|_| (0..BLOCKS).map(|_| rng.u64(..)).collect()).collect();
  let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
  let copies = ENTRIES / BLOCKS / documents; // workers per document
  let t = Instant::now();
  let mut events = 0usize;
  for start in (0..BLOCKS).step_by(chunk) {
    for (d, doc) in docs.iter().enumerate() {
      for c in 0..copies {
        let worker = (d * copies + c) as u64 % WORKERS;
        let base = ((d * copies + c) * BLOCKS) as u64;
        let engine: Vec<u64> = (start..start + chunk).map(|i| base + i as u64).collect();
        let parent = (start > 0).then(|| base + start as u64 - 1);
        ix.apply_stored(WorkerKey { worker, dp_rank: 0 }, parent, &engine, &doc[start..start + chunk], 0.0).unwrap();
        events += 1;
      }
    }
  }
  let load_s = t.elapsed().as_secs_f64();
  let s = ix.stats();
  let queries: Vec<(usize, Vec<u64>)> = (0..4096)
    .map(|_| {
      let doc = &docs[rng.usize(..documents)];
      let keep = if rng.bool() { BLOCKS } else { rng.usize(..=BLOCKS) };
      (keep, (0..BLOCKS).map(|i| if i < keep { doc[i] } else { rng.u64(..) }).collect())
    })
    .collect();
  let mut out = Vec::new();
  // Best of 3 rounds: the machine is shared, a round can be disturbed.
  let mut best: Option<(f64, f64, f64)> = None;
  for _ in 0..3 {
    let mut all = Vec::with_capacity(5 * queries.len());
    let mut full = Vec::new();
    for _ in 0..5 {
      for (keep, q) in &queries {
        let t = Instant::now();
        ix.find_matches_into(q, early_exit, 0.0, &mut out);
        let us = t.elapsed().as_secs_f64() * 1e6;
        all.push(us);
        if *keep == BLOCKS {
          full.push(us);
        }
      }
    }
    all.sort_by(f64::total_cmp);
    full.sort_by(f64::total_cmp);
    let round = (pct(&all, 0.5), pct(&all, 0.99), pct(&full, 0.99));
    if best.is_none_or(|b| round.1 < b.1) {
      best = Some(round);
    }
  }
  let (p50, p99, full99) = best.unwrap();
  println!(
    "{name}: {} entries, {} nodes, {:.1} B/entry, {:.1} B/node; events {:.0}/s ({:.1} M blocks/s); find_matches early_exit={early_exit} p50 {p50:.2} us p99 {p99:.2} us (all 512 blocks matched: p99 {full99:.2} us)",
    s.blocks,
    s.nodes,
    s.bytes_per_block(),
    s.bytes_per_node(),
    events as f64 / load_s,
    s.blocks as f64 / load_s / 1e6,
  );
}

#[test]
#[ignore]
fn headline_figures() {
  scenario("no sharing (2048 docs x 1 worker)", 2048, false);
  scenario("8 workers per doc (256 docs)", 256, false);
  scenario("8 workers per doc (256 docs)", 256, true);
  scenario("64 workers per doc (32 docs)", 32, false);
  scenario_chunked("no sharing, 1-block events interleaved", 2048, false, 1);
  scenario_chunked("8 workers per doc, 16-block events interleaved", 256, false, 16);
}

#[test]
#[ignore]
fn chain_hash_cost() {
  let mut rng = Rng::with_seed(1);
  let local: Vec<u64> = (0..512).map(|_| rng.u64(..)).collect();
  let t = Instant::now();
  let mut acc = 0u64;
  for _ in 0..10_000 {
    let mut seq = local[0];
    for &l in &local[1..] {
      seq = super::tree::chain_key(seq, std::hint::black_box(l));
    }
    acc ^= seq;
  }
  println!("chain_key x 512: {:.2} us ({acc})", t.elapsed().as_secs_f64() * 1e6 / 10_000.0);
}

#[test]
#[ignore]
fn hot_walk() {
  scenario("64 workers per doc (32 docs)", 32, false);
}

/// The bench suite's workload (bench/indexer/workload.ts): 64 workers x `per_worker` documents
/// of 512 blocks (16 shared 64-block system prompts), every document on two workers, stored by
/// events of 32 blocks. Its events as (worker, document, first block), in the suite's order.
pub(crate) fn bench_stored_chunks(per_worker: usize) -> Vec<(usize, usize, usize)> {
  let half = per_worker / 2;
  let docs_of = |w: usize| -> Vec<usize> { (0..half).map(|j| w * half + j).chain((0..half).map(|j| ((w + 63) % 64) * half + j)).collect() };
  let mut chunks = Vec::new();
  for w in 0..64 {
    let mut systems = std::collections::HashSet::new();
    for d in docs_of(w) {
      let from = if systems.insert(d % 16) { 0 } else { BENCH_SYS };
      chunks.extend((from..BENCH_DOC).step_by(BENCH_EVENT).map(|b| (w, d, b)));
    }
  }
  chunks
}

pub(crate) const BENCH_DOC: usize = 512;
pub(crate) const BENCH_SYS: usize = 64;
pub(crate) const BENCH_EVENT: usize = 32;

/// The engine's name of block `b` of document `d` in the bench workload.
pub(crate) fn bench_engine_name(d: usize, b: usize) -> u64 {
  if b < BENCH_SYS {
    (1 + (d % 16) * BENCH_SYS + b) as u64
  } else {
    (1_000_000 + d * BENCH_DOC + b) as u64
  }
}

/// The bench suite's workload (bench/suites/indexer.ts): 64 workers x 34 documents of 512 blocks
/// (16 shared 64-block system prompts), every document on two workers, stored by events of 32
/// blocks; then the last 64 blocks of every copy removed, tail first.
#[test]
#[ignore]
fn bench_workload() {
  const DOC: usize = 512;
  const SYS: usize = 64;
  const EV: usize = 32;
  let per_worker = 34;
  let half = per_worker / 2;
  let sys_local = |s: usize, b: usize| (s * 1000 + b) as u64 ^ 0x5555_0000_0000;
  let doc_local = |d: usize, b: usize| if b < SYS { sys_local(d % 16, b) } else { ((d + 1) * 100_000 + b) as u64 };
  let name = bench_engine_name;
  let docs_of = |w: usize| -> Vec<usize> { (0..half).map(|j| w * half + j).chain((0..half).map(|j| ((w + 63) % 64) * half + j)).collect() };
  let events: Vec<_> = bench_stored_chunks(per_worker)
    .into_iter()
    .map(|(w, d, b)| {
      let engine: Vec<u64> = (b..b + EV).map(|i| name(d, i)).collect();
      let local: Vec<u64> = (b..b + EV).map(|i| doc_local(d, i)).collect();
      (w as u64, (b > 0).then(|| name(d, b - 1)), engine, local)
    })
    .collect();
  let mut ix = RadixIndexer::new(IndexerConfig::new(16, IndexerMode::Events));
  let t = Instant::now();
  for (w, parent, engine, local) in &events {
    ix.apply_stored(WorkerKey { worker: *w, dp_rank: 0 }, *parent, engine, local, 0.0).unwrap();
  }
  let store_s = t.elapsed().as_secs_f64();
  let s = ix.stats();
  let docs = 64 * half;
  let mut rng = Rng::with_seed(5);
  let queries: Vec<Vec<u64>> = (0..256)
    .map(|q| {
      let d = (q * 7919) % docs;
      (0..DOC).map(|b| if (q % 4 == 2 && b >= DOC / 2) || (q % 4 == 3 && b >= SYS) { rng.u64(..) } else { doc_local(d, b) }).collect()
    })
    .collect();
  let mut out = Vec::new();
  let mut lat = Vec::new();
  for round in 0..40 {
    for q in &queries {
      let t = Instant::now();
      ix.find_matches_sorted_into(q, false, 0.0, &mut out);
      if round > 0 {
        lat.push(t.elapsed().as_secs_f64() * 1e6);
      }
    }
  }
  lat.sort_by(f64::total_cmp);
  let mut removals = Vec::new();
  for w in 0..64 {
    for d in docs_of(w) {
      for b in [DOC - EV, DOC - 2 * EV] {
        removals.push((w as u64, (0..EV).map(|i| name(d, b + EV - 1 - i)).collect::<Vec<u64>>()));
      }
    }
  }
  let t = Instant::now();
  let mut removed = 0;
  for (w, hashes) in &removals {
    removed += ix.apply_removed(WorkerKey { worker: *w, dp_rank: 0 }, hashes, 0.0);
  }
  let remove_s = t.elapsed().as_secs_f64();
  assert_eq!(removed, removals.len() * EV);
  println!(
    "bench workload: {} blocks, {} nodes, {} edges, {:.1} B/block; stored {:.0} events/s; removed {:.0} events/s; find sorted p50 {:.2} us p99 {:.2} us",
    s.blocks,
    s.nodes,
    s.edges,
    s.bytes_per_block(),
    events.len() as f64 / store_s,
    removals.len() as f64 / remove_s,
    pct(&lat, 0.5),
    pct(&lat, 0.99)
  );
}
