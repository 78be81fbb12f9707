//! Dynamo's two event-driven indexers as its router runs them: `RadixTree` on one thread, and
//! `ConcurrentRadixTreeCompressed` inside a `ThreadPoolIndexer` (events applied by its event
//! threads, `find_matches` inline on the caller's thread).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use dynamo_kv_router::indexer::KvIndexerInterface;
use dynamo_kv_router::protocols::{
    ExternalSequenceBlockHash, KvCacheEvent, KvCacheEventData, KvCacheRemoveData, KvCacheStoreData,
    KvCacheStoredBlockData, LocalBlockHash, OverlapScores, RouterEvent,
};
use dynamo_kv_router::{ConcurrentRadixTreeCompressed, RadixTree, ThreadPoolIndexer};

use crate::measure::{heap_in_use, warnings_logged};
use crate::workload::Workload;

/// `KvRouterConfig::default().router_event_threads` in dynamo-kv-router 1.6.1.
pub const EVENT_THREADS: usize = 4;

pub type Pool = ThreadPoolIndexer<ConcurrentRadixTreeCompressed>;

pub fn stored_events(w: &Workload) -> Vec<RouterEvent> {
    w.stored
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let blocks = e
                .block_hashes
                .iter()
                .zip(&e.local_hashes)
                .map(|(&block, &local)| KvCacheStoredBlockData {
                    block_hash: ExternalSequenceBlockHash(block),
                    tokens_hash: LocalBlockHash(local),
                    mm_extra_info: None,
                })
                .collect();
            let data = KvCacheEventData::Stored(KvCacheStoreData {
                parent_hash: e.parent.map(ExternalSequenceBlockHash),
                start_position: None,
                blocks,
            });
            RouterEvent::new(e.worker as u64, KvCacheEvent { event_id: i as u64, data, dp_rank: e.dp_rank })
        })
        .collect()
}

pub fn removed_events(w: &Workload) -> Vec<RouterEvent> {
    w.removed
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let data = KvCacheEventData::Removed(KvCacheRemoveData {
                block_hashes: e.block_hashes.iter().map(|&h| ExternalSequenceBlockHash(h)).collect(),
            });
            RouterEvent::new(e.worker as u64, KvCacheEvent { event_id: (w.stored.len() + i) as u64, data, dp_rank: e.dp_rank })
        })
        .collect()
}

/// The output of a future that completes when first polled (the pool answers `find_matches`
/// inline on the caller's thread), without an executor's own cost in the figure.
pub fn ready<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("expected a future that completes at once"),
    }
}

pub struct Applied {
    pub seconds: f64,
    /// Events the indexer refused (RadixTree: an Err; the pool: a WARN its threads logged).
    pub rejected: u64,
}

pub struct Built {
    pub applied: Applied,
    /// Heap the indexer holds after the build, the events it consumed freed.
    pub heap_bytes: u64,
}

pub struct Indexers {
    pub radix: RadixTree,
    pub pool: Pool,
    rt: tokio::runtime::Runtime,
}

pub struct Builds {
    pub indexers: Indexers,
    pub radix: Built,
    pub pool: Built,
}

/// Builds both indexers from empty, one after the other, timing the stored events alone (they
/// are made into `RouterEvent`s first, as the router decodes them before applying them).
pub fn build(w: &Workload, block_size: u32) -> Builds {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");

    let before = heap_in_use();
    let mut radix = RadixTree::new();
    let events = stored_events(w);
    let t0 = Instant::now();
    let mut rejected = 0;
    for e in events {
        if radix.apply_event(e).is_err() {
            rejected += 1;
        }
    }
    let radix_applied = Applied { seconds: t0.elapsed().as_secs_f64(), rejected };
    let radix_heap = heap_in_use().saturating_sub(before);

    let before = heap_in_use();
    let pool = ThreadPoolIndexer::new(ConcurrentRadixTreeCompressed::new(), EVENT_THREADS, block_size);
    let events = stored_events(w);
    let warned = warnings_logged();
    let t0 = Instant::now();
    for e in events {
        pool.enqueue_event(e).expect("the pool's event threads are running");
    }
    rt.block_on(pool.flush_and_wait()).expect("the pool flushes");
    let pool_applied = Applied { seconds: t0.elapsed().as_secs_f64(), rejected: warnings_logged() - warned };
    let pool_heap = heap_in_use().saturating_sub(before);

    Builds {
        indexers: Indexers { radix, pool, rt },
        radix: Built { applied: radix_applied, heap_bytes: radix_heap },
        pool: Built { applied: pool_applied, heap_bytes: pool_heap },
    }
}

impl Indexers {
    /// Applies the removals to both, timed like the stored events.
    pub fn remove(&mut self, w: &Workload) -> (Applied, Applied) {
        let events = removed_events(w);
        let t0 = Instant::now();
        let mut rejected = 0;
        for e in events {
            if self.radix.apply_event(e).is_err() {
                rejected += 1;
            }
        }
        let radix = Applied { seconds: t0.elapsed().as_secs_f64(), rejected };

        let events = removed_events(w);
        let warned = warnings_logged();
        let t0 = Instant::now();
        for e in events {
            self.pool.enqueue_event(e).expect("the pool's event threads are running");
        }
        self.rt.block_on(self.pool.flush_and_wait()).expect("the pool flushes");
        let pool = Applied { seconds: t0.elapsed().as_secs_f64(), rejected: warnings_logged() - warned };
        (radix, pool)
    }

    /// (worker, dp_rank) entries held: RadixTree's own count, and the pool's shard snapshot.
    pub fn blocks(&self) -> (usize, usize) {
        let pool: usize = self.rt.block_on(self.pool.shard_sizes()).iter().map(|s| s.block_count).sum();
        (self.radix.current_size(), pool)
    }

    pub fn radix_find(&self, query: Vec<LocalBlockHash>) -> OverlapScores {
        self.radix.find_matches(query, false)
    }

    /// The router's call: `KvIndexerInterface::find_matches`, answered inline.
    pub fn pool_find(&self, query: Vec<LocalBlockHash>) -> OverlapScores {
        ready(self.pool.find_matches(query)).expect("find_matches answers")
    }
}

/// Scores as [worker, dp_rank, blocks] triples, flattened.
pub fn flatten(scores: &OverlapScores) -> Vec<u64> {
    let mut out = Vec::with_capacity(scores.scores.len() * 3);
    for (w, &blocks) in &scores.scores {
        out.extend([w.worker_id, w.dp_rank as u64, blocks as u64]);
    }
    out
}
