//! The fleet-scale timeline (bench/peers/fleet-scale/ops-file.ts writes it) replayed on Dynamo's
//! `ConcurrentRadixTreeCompressed` inside the `ThreadPoolIndexer` its router runs: each op at its
//! time within the benchmark window, events enqueued to the pool's event threads, find_matches
//! answered inline on this thread and timed alone, as mooncake_bench times it. Behind schedule,
//! ops run back to back. The round ends when the pool has applied every event.

use std::time::{Duration, Instant};

use dynamo_kv_router::indexer::KvIndexerInterface;
use dynamo_kv_router::protocols::{
    ExternalSequenceBlockHash, KvCacheEvent, KvCacheEventData, KvCacheRemoveData, KvCacheStoreData,
    KvCacheStoredBlockData, LocalBlockHash, RouterEvent,
};
use dynamo_kv_router::{ConcurrentRadixTreeCompressed, ThreadPoolIndexer};
use serde_json::{json, Value};

use crate::dynamo::{ready, EVENT_THREADS};
use crate::measure::{cpu_seconds, warnings_logged};
use crate::workload::{Cursor, FormatError};

const MAGIC: &[u8; 8] = b"KVRFLEET";
const VERSION: u32 = 1;

pub enum Op {
    Query { at_ns: u64, local: Vec<LocalBlockHash> },
    Stored { at_ns: u64, worker: u32, parent: Option<u64>, hashes: Vec<u64>, local: Vec<u64> },
    Removed { at_ns: u64, worker: u32, hashes: Vec<u64> },
}

impl Op {
    fn at_ns(&self) -> u64 {
        match self {
            Op::Query { at_ns, .. } | Op::Stored { at_ns, .. } | Op::Removed { at_ns, .. } => *at_ns,
        }
    }
}

pub struct Fleet {
    pub block_size: u32,
    pub workers: u32,
    pub ops: Vec<Op>,
    pub queries: usize,
    /// The simulated time of the last op: the timeline's span, compressed into a round's window.
    pub span_ns: u64,
}

pub fn parse(bytes: &[u8]) -> Result<Fleet, FormatError> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(8, "the magic")? != MAGIC {
        return Err(FormatError("not a kvroute fleet timeline (magic)".into()));
    }
    let version = c.u32("the version")?;
    if version != VERSION {
        return Err(FormatError(format!("version {version}, this reader knows {VERSION}")));
    }
    let block_size = c.u32("the block size")?;
    let count = c.u32("the op count")? as usize;
    let workers = c.u32("the worker count")?;
    let mut ops = Vec::with_capacity(count);
    let mut queries = 0;
    for _ in 0..count {
        let kind = c.u32("an op's kind")?;
        let worker = c.u32("an op's worker")?;
        let at_ns = c.u64("an op's time")?;
        let n = c.u32("an op's block count")? as usize;
        let has_parent = c.u32("an op's parent flag")? != 0;
        let parent = c.u64("an op's parent")?;
        let first = c.u64s(n, "an op's hashes")?;
        ops.push(match kind {
            0 => {
                queries += 1;
                Op::Query { at_ns, local: first.into_iter().map(LocalBlockHash).collect() }
            }
            1 => Op::Stored { at_ns, worker, parent: has_parent.then_some(parent), hashes: first, local: c.u64s(n, "a stored op's local hashes")? },
            2 => Op::Removed { at_ns, worker, hashes: first },
            other => return Err(FormatError(format!("op kind {other}"))),
        });
    }
    if c.at != bytes.len() {
        return Err(FormatError(format!("{} bytes after the last op", bytes.len() - c.at)));
    }
    let span_ns = ops.last().map_or(0, Op::at_ns);
    Ok(Fleet { block_size, workers, ops, queries, span_ns })
}

/// The op's event as the router hands it to its indexer (made before the round starts).
fn event(op: &Op, id: u64) -> Option<RouterEvent> {
    let (worker, data) = match op {
        Op::Query { .. } => return None,
        Op::Stored { worker, parent, hashes, local, .. } => {
            let blocks = hashes
                .iter()
                .zip(local)
                .map(|(&h, &l)| KvCacheStoredBlockData { block_hash: ExternalSequenceBlockHash(h), tokens_hash: LocalBlockHash(l), mm_extra_info: None })
                .collect();
            (*worker, KvCacheEventData::Stored(KvCacheStoreData { parent_hash: parent.map(ExternalSequenceBlockHash), start_position: None, blocks }))
        }
        Op::Removed { worker, hashes, .. } => {
            (*worker, KvCacheEventData::Removed(KvCacheRemoveData { block_hashes: hashes.iter().map(|&h| ExternalSequenceBlockHash(h)).collect() }))
        }
    };
    Some(RouterEvent::new(worker as u64, KvCacheEvent { event_id: id, data, dp_rank: 0 }))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((p / 100.0) * sorted.len() as f64).floor().min((sorted.len() - 1) as f64) as usize]
}

/// One round from an empty index: the whole timeline within `window_ms`.
pub fn replay(f: &Fleet, window_ms: f64) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    let pool = ThreadPoolIndexer::new(ConcurrentRadixTreeCompressed::new(), EVENT_THREADS, f.block_size);
    let mut events: Vec<Option<RouterEvent>> = f.ops.iter().enumerate().map(|(i, op)| event(op, i as u64)).collect();
    let to_window = if f.span_ns == 0 { 0.0 } else { window_ms * 1e6 / f.span_ns as f64 };
    let mut finds = Vec::with_capacity(f.queries);
    let warned = warnings_logged();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    for (op, ev) in f.ops.iter().zip(events.iter_mut()) {
        let due = Duration::from_nanos((op.at_ns() as f64 * to_window) as u64);
        let now = t0.elapsed();
        if due > now + Duration::from_micros(20) {
            std::thread::sleep(due - now);
        }
        match op {
            Op::Query { local, .. } => {
                let s = Instant::now();
                let scores = ready(pool.find_matches(local.clone())).expect("find_matches answers");
                finds.push(s.elapsed().as_nanos() as u64);
                drop(scores);
            }
            _ => pool.enqueue_event(ev.take().expect("an event op has its event")).expect("the pool's event threads are running"),
        }
    }
    rt.block_on(pool.flush_and_wait()).expect("the pool flushes");
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    let cpu_s = cpu_seconds() - cpu0;
    let blocks: usize = rt.block_on(pool.shard_sizes()).iter().map(|s| s.block_count).sum();
    let last_due = f.span_ns as f64 * to_window / 1e6;
    finds.sort_unstable();
    let ops = f.ops.len() as f64;
    json!({
        "type": "replayed",
        "window_ms": window_ms,
        "ops": f.ops.len(),
        "offered_ops_per_s": ops / (window_ms / 1e3),
        "achieved_ops_per_s": ops / (wall_ms.max(window_ms) / 1e3),
        "cpu_s": cpu_s,
        "ops_per_cpu_s": ops / cpu_s,
        "find_p50_ns": percentile(&finds, 50.0),
        "find_p99_ns": percentile(&finds, 99.0),
        "behind_ms": (wall_ms - last_due).max(0.0),
        "rejected": warnings_logged() - warned,
        "blocks_at_end": blocks,
    })
}
