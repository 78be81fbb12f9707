//! A quick local measurement of applying KV event payloads (the real benchmark is bench/, run by
//! `npm run bench -- --only indexer`): the indexer suite's BlockStored events encoded as engines
//! publish them, timed decoded only, and decoded, hashed and applied. Ignored by default:
//!   cargo test --release --manifest-path native/Cargo.toml events::perf -- --ignored --nocapture

use super::apply::shape_of;
use super::apply::{apply_batch, apply_decoded};
use super::decode::Decoded;
use crate::indexer::perf::{bench_engine_name, bench_stored_chunks, BENCH_DOC, BENCH_EVENT, BENCH_SYS};
use crate::indexer::{IndexerConfig, IndexerMode, RadixIndexer, WorkerKey};

/// This thread's CPU time in seconds (the machine is shared: wall time counts other processes).
fn cpu_s() -> f64 {
  #[repr(C)]
  struct Timespec {
    sec: i64,
    nsec: i64,
  }
  extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
  }
  const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
  let mut ts = Timespec { sec: 0, nsec: 0 };
  // SAFETY: clock_gettime writes the struct it is given.
  unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
  ts.sec as f64 + ts.nsec as f64 * 1e-9
}

/// Minor page faults of the process so far.
fn minor_faults() -> i64 {
  #[repr(C)]
  struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss: i64,
    ixrss: i64,
    idrss: i64,
    isrss: i64,
    minflt: i64,
    rest: [i64; 9],
  }
  extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
  }
  // SAFETY: getrusage writes the struct it is given (the Linux layout above).
  let mut u: Rusage = unsafe { std::mem::zeroed() };
  unsafe { getrusage(0, &mut u) };
  u.minflt
}

const BLOCK: usize = 16;
const DOC: usize = BENCH_DOC;
const SYS: usize = BENCH_SYS;
const EV: usize = BENCH_EVENT;
const PER_BATCH: usize = 32;

/// bench/indexer/workload.ts's token stream (xorshift32).
fn fill_tokens(out: &mut [u32], seed: u32) {
  let mut x = seed.wrapping_mul(2_654_435_761);
  if x == 0 {
    x = 1;
  }
  for t in out.iter_mut() {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *t = x % 150_000;
  }
}

fn document(doc: usize) -> Vec<u32> {
  let mut t = vec![0u32; DOC * BLOCK];
  fill_tokens(&mut t[..SYS * BLOCK], 1_000_003 + (doc % 16) as u32);
  fill_tokens(&mut t[SYS * BLOCK..], 7 + doc as u32);
  t
}

struct Stored {
  worker: u64,
  parent: Option<u64>,
  engine: Vec<u64>,
  tokens: Vec<u32>,
}

fn stored_events(per_worker: usize) -> Vec<Stored> {
  let mut docs: std::collections::HashMap<usize, Vec<u32>> = Default::default();
  bench_stored_chunks(per_worker)
    .into_iter()
    .map(|(w, d, b)| {
      let tokens = docs.entry(d).or_insert_with(|| document(d));
      Stored {
        worker: w as u64,
        parent: (b > 0).then(|| bench_engine_name(d, b - 1)),
        engine: (b..b + EV).map(|i| bench_engine_name(d, i)).collect(),
        tokens: tokens[b * BLOCK..(b + EV) * BLOCK].to_vec(),
      }
    })
    .collect()
}

/// Array-encoded batches, as the bench's KvEventBatchEncoder('array') writes them.
fn payloads(events: &[Stored]) -> Vec<(u64, Vec<u8>)> {
  use rmp::encode::*;
  let mut out = Vec::new();
  let mut i = 0;
  while i < events.len() {
    let w = events[i].worker;
    let mut batch = Vec::new();
    while i < events.len() && events[i].worker == w && batch.len() < PER_BATCH {
      batch.push(&events[i]);
      i += 1;
    }
    let mut b = Vec::new();
    write_array_len(&mut b, 3).unwrap();
    write_f64(&mut b, 1_700_000_000.0).unwrap();
    write_array_len(&mut b, batch.len() as u32).unwrap();
    for e in batch {
      write_array_len(&mut b, 7).unwrap();
      write_str(&mut b, "BlockStored").unwrap();
      write_array_len(&mut b, e.engine.len() as u32).unwrap();
      for &h in &e.engine {
        write_uint(&mut b, h).unwrap();
      }
      match e.parent {
        Some(p) => drop(write_uint(&mut b, p).unwrap()),
        None => write_nil(&mut b).unwrap(),
      }
      write_array_len(&mut b, e.tokens.len() as u32).unwrap();
      for &t in &e.tokens {
        write_uint(&mut b, t as u64).unwrap();
      }
      write_uint(&mut b, BLOCK as u64).unwrap();
      write_nil(&mut b).unwrap();
      write_str(&mut b, "GPU").unwrap();
    }
    write_uint(&mut b, 0).unwrap();
    out.push((w, b));
  }
  out
}

/// `ROUNDS` from the environment, else `default`.
fn rounds_from_env(default: usize) -> usize {
  std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(default)
}

#[test]
#[ignore]
fn stored_payloads() {
  let events = stored_events(34);
  let batches = payloads(&events);
  let rounds = rounds_from_env(3);
  // APPLY_ONLY=1: only the whole path (decode, hash, apply), for a profiler.
  if std::env::var("APPLY_ONLY").is_ok() {
    for _ in 0..rounds {
      let mut ix = RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events));
      let mut d = Decoded::default();
      let t = cpu_s();
      for (w, bytes) in &batches {
        apply_batch(&mut ix, WorkerKey { worker: *w, dp_rank: 0 }, bytes, &mut d).unwrap();
      }
      println!("decoded, hashed and applied {:.0} events/s per thread CPU second", events.len() as f64 / (cpu_s() - t));
    }
    return;
  }
  for _ in 0..rounds {
    let mut d = Decoded::default();
    let shape = shape_of(&RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events)));
    let t = cpu_s();
    for (_, bytes) in &batches {
      d.decode(bytes, shape).unwrap();
    }
    let decode_s = cpu_s() - t;
    let mut ix = RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events));
    let t = cpu_s();
    for e in &events {
      let local = crate::hash::block_hashes(&e.tokens, BLOCK, crate::hash::HASH_SEED);
      ix.apply_stored(WorkerKey { worker: e.worker, dp_rank: 0 }, e.parent, &e.engine, &local, 0.0).unwrap();
    }
    let tree_s = cpu_s() - t;
    let mut ix = RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events));
    let t = cpu_s();
    let mut stored = 0;
    for (w, bytes) in &batches {
      stored += apply_batch(&mut ix, WorkerKey { worker: *w, dp_rank: 0 }, bytes, &mut d).unwrap().stored;
    }
    let all_s = cpu_s() - t;
    assert_eq!(stored as usize, events.len());
    let n = events.len() as f64;
    println!(
      "{} events in {} payloads, per thread CPU second: decoded and hashed {:.0}/s; hashed (Vec per event) and applied {:.0}/s; decoded, hashed and applied {:.0}/s ({} blocks)",
      events.len(),
      batches.len(),
      n / decode_s,
      n / tree_s,
      n / all_s,
      ix.stats().blocks
    );
  }
}

/// The apply alone: every payload decoded (and hashed) once up front, then applied to a fresh
/// index per round, timed in thread CPU time (`ROUNDS`, default 7). For a profiler too: the
/// decoding happens once, the applies `ROUNDS` times.
#[test]
#[ignore]
fn stored_apply() {
  let events = stored_events(34);
  let batches = payloads(&events);
  let rounds = rounds_from_env(7);
  let shape = shape_of(&RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events)));
  let decoded: Vec<(u64, Decoded)> = batches
    .iter()
    .map(|(w, bytes)| {
      let mut d = Decoded::default();
      d.decode(bytes, shape).unwrap();
      (*w, d)
    })
    .collect();
  let mut per_event = Vec::new();
  for round in 0..rounds {
    let mut ix = RadixIndexer::new(IndexerConfig::new(BLOCK as u32, IndexerMode::Events));
    let faults = minor_faults();
    let t = cpu_s();
    let mut stored = 0;
    for (w, d) in &decoded {
      stored += apply_decoded(&mut ix, WorkerKey { worker: *w, dp_rank: 0 }, d).stored;
    }
    let s = cpu_s() - t;
    let faults = minor_faults() - faults;
    assert_eq!(stored as usize, events.len());
    let ns = s * 1e9 / events.len() as f64;
    if round == 0 {
      // The process's first apply takes its memory fresh from the kernel, as the bench's one pass does.
      println!("first round {ns:.0} ns per event");
    } else {
      per_event.push(ns);
    }
    println!(
      "applied {:.0} events/s per thread CPU second ({ns:.0} ns per event, {:.1} B/block, {faults} page faults)",
      events.len() as f64 / s,
      ix.stats().bytes_per_block()
    );
  }
  per_event.sort_by(f64::total_cmp);
  if !per_event.is_empty() {
    println!("apply median {:.0} ns per stored event of {EV} blocks (rounds after the first)", per_event[per_event.len() / 2]);
  }
}

#[test]
#[ignore]
fn token_lists() {
  use super::msgpack::Reader;
  let mut tokens = vec![0u32; 512];
  fill_tokens(&mut tokens, 99);
  let mut bytes = Vec::new();
  rmp::encode::write_array_len(&mut bytes, 512).unwrap();
  for &t in &tokens {
    rmp::encode::write_uint(&mut bytes, t as u64).unwrap();
  }
  let mut out = Vec::with_capacity(512);
  let mut best = f64::MAX;
  for _ in 0..20 {
    let t = cpu_s();
    for _ in 0..2_000 {
      let mut r = Reader::new(std::hint::black_box(&bytes));
      let n = r.array().unwrap().unwrap();
      out.clear();
      r.u32_list(n, &mut out).unwrap();
      std::hint::black_box(&out);
    }
    best = best.min((cpu_s() - t) * 1e9 / 2_000.0 / 512.0);
    assert_eq!(out, tokens);
  }
  println!("u32_list: {best:.2} ns per token, best of 20 rounds ({} bytes for 512)", bytes.len());
}
