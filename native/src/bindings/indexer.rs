//! `NativeIndexer`: the radix indexer behind `KvIndexer` (src/core/indexer.ts). Checks and
//! conversions only; the tree lives in `crate::indexer`. It sits behind a mutex (event batches
//! and snapshots are applied and encoded on libuv's threads; every other call takes the lock for
//! its own short duration) and is shared with the
//! routing cores built over it, which match and record through the same tree.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{coded, range_error, Code, Result};
use super::fast;
use super::hash::{check_block_size, mm_blocks, to_u64};
use crate::hash::{BlockHasher, Window};
use crate::indexer::{IndexerConfig, IndexerMode, RadixIndexer, RejectReason, WorkerKey};
use crate::tiers::{medium_tier, LowerTier, Medium};

const MAX_ID: f64 = 9_007_199_254_740_991.0; // 2^53 - 1
/// Blocks per call (events, prompts): 2^20 blocks is a 16M-token prompt at block size 16.
pub const MAX_BLOCKS_PER_CALL: usize = 1 << 20;

#[napi(object)]
pub struct NativeIndexerConfig {
  pub block_size: u32,
  pub mode: String,
  pub max_blocks: Option<f64>,
  pub ttl_ms: f64,
  pub approx_max_blocks: f64,
  pub prune_fraction: f64,
  /// EAGLE engines: blocks hash blockSize + 1 tokens (stored events and prompts alike).
  pub eagle: Option<bool>,
  /// Index blocks on lower tiers (host, disk, external) from their events (events mode; default true).
  pub lower_tiers: Option<bool>,
}

#[napi(object)]
pub struct NativeRejections {
  pub unknown_parent: f64,
  pub duplicate_hash: f64,
  pub self_parent: f64,
  pub hash_collision: f64,
  pub index_full: f64,
  pub malformed: f64,
  pub unknown_removal: f64,
}

#[napi(object)]
pub struct NativeIndexerStats {
  pub blocks: f64,
  pub nodes: f64,
  pub workers: f64,
  pub approx_bytes: f64,
  pub bytes_per_node: f64,
  pub bytes_per_block: f64,
  pub edges: f64,
  pub events_applied: f64,
  pub routings_recorded: f64,
  pub evictions: f64,
  pub expired: f64,
  pub rejected: NativeRejections,
  /// (worker, block) pairs held on each lower tier: host, disk, external.
  pub lower_tier_blocks: Vec<f64>,
}

#[napi(object)]
pub struct NativeWorkerRank {
  pub worker: f64,
  pub dp_rank: u32,
}

#[napi]
pub struct NativeIndexer {
  inner: SharedIndex,
  /// Local hashes of the event being applied.
  local: std::cell::RefCell<Vec<u64>>,
  /// The event batch being applied (applyEventBatch), its buffers reused from call to call.
  pub(super) decoded: std::cell::RefCell<crate::events::decode::Decoded>,
  /// This tree's handle in the fast calls' table (fast.rs).
  handle: u32,
}

impl Drop for NativeIndexer {
  fn drop(&mut self) {
    fast::unregister(self.handle);
  }
}

#[napi]
impl NativeIndexer {
  #[napi(constructor)]
  pub fn new(config: NativeIndexerConfig) -> Result<Self> {
    check_block_size(config.block_size)?;
    let mode = IndexerMode::parse(&config.mode).ok_or_else(|| range_error(format!("mode must be 'events' or 'approximate', got '{}'", config.mode)))?;
    let cfg = IndexerConfig {
      block_size: config.block_size,
      mode,
      max_blocks: config.max_blocks.map(|n| to_count(n, "maxBlocks")).transpose()?,
      ttl_ms: config.ttl_ms,
      approx_max_blocks: to_count(config.approx_max_blocks, "approxMaxBlocks")?,
      prune_fraction: config.prune_fraction,
      window: Window::from_eagle(config.eagle == Some(true)),
    };
    let mut indexer = RadixIndexer::try_new(cfg).map_err(range_error)?;
    if config.lower_tiers == Some(false) {
      indexer.set_lower_tiers(false);
    }
    Ok(Self::wrap(indexer))
  }

  /// Loads a `snapshot()`; refuses damaged, truncated or unknown-version bytes.
  #[napi(factory)]
  pub fn restore(bytes: &[u8]) -> Result<Self> {
    let indexer = RadixIndexer::restore(bytes).map_err(|e| coded(Code::InvalidSnapshot, e))?;
    Ok(Self::wrap(indexer))
  }

  #[napi(getter)]
  pub fn block_size(&self) -> u32 {
    lock(&self.inner).block_size()
  }

  #[napi(getter)]
  pub fn mode(&self) -> String {
    lock(&self.inner).mode().name().to_string()
  }

  /// Whether blocks hash EAGLE windows (blockSize + 1 tokens).
  #[napi(getter)]
  pub fn eagle(&self) -> bool {
    lock(&self.inner).window().is_eagle()
  }

  /// Whether lower-tier events are indexed.
  #[napi(getter)]
  pub fn lower_tiers(&self) -> bool {
    lock(&self.inner).lower_tiers_enabled()
  }

  /// A BlockStored event. Hashes `token_ids` (block_hashes.len() complete blocks) with `seed`
  /// and, per block, the CSR multimodal hashes. `medium` routes it (none: the device); an
  /// unknown medium, or a lower tier this index does not keep, is refused with a RangeError.
  /// False when refused (counted by reason).
  #[napi]
  #[allow(clippy::too_many_arguments, reason = "a JavaScript method's parameters, as the TypeScript wrapper passes them")]
  pub fn apply_stored(
    &self,
    worker: f64,
    dp_rank: f64,
    parent_hash: Option<BigInt>,
    block_hashes: &[u64],
    token_ids: &[u32],
    seed: BigInt,
    mm_offsets: Option<&[u32]>,
    mm_hashes: Option<&[u64]>,
    now_ms: f64,
    medium: Option<String>,
  ) -> Result<bool> {
    let key = to_key(worker, dp_rank)?;
    let parent = parent_hash.map(|p| to_u64(&p, "parentHash")).transpose()?;
    let seed = to_u64(&seed, "seed")?;
    check_now(now_ms)?;
    check_blocks(block_hashes.len(), "blockHashes")?;
    let mut indexer = borrow_in(&self.inner, IndexerMode::Events, "applyStored")?;
    let tier = tier_of(&indexer, medium.as_deref())?;
    let bs = indexer.block_size() as usize;
    let window = indexer.window();
    let want = window.tokens_for(block_hashes.len(), bs);
    if token_ids.len() != want {
      let plus = if window.is_eagle() && !block_hashes.is_empty() { " + 1 (EAGLE)" } else { "" };
      return Err(range_error(format!(
        "tokenIds must hold blockHashes.length x blockSize{plus} = {} x {bs}{plus} = {want} tokens, got {}",
        block_hashes.len(),
        token_ids.len()
      )));
    }
    let mm = mm_blocks(mm_offsets, mm_hashes)?;
    if let Some(mm) = mm.filter(|mm| mm.blocks() > block_hashes.len()) {
      return Err(range_error(format!("multimodal hashes list {} blocks but the event has {}", mm.blocks(), block_hashes.len())));
    }
    let mut local = self.local.borrow_mut();
    local.clear();
    BlockHasher::new(bs, seed).window(window).multimodal(mm).hash_extend(token_ids, &mut local);
    let applied = match tier {
      None => indexer.apply_stored(key, parent, block_hashes, &local, now_ms),
      Some(t) => indexer.apply_lower_stored(key, t, parent, block_hashes, &local),
    };
    match applied {
      Ok(()) => Ok(true),
      Err(RejectReason::WrongMode) => Err(coded(Code::WrongMode, "applyStored needs an indexer in 'events' mode")),
      Err(_) => Ok(false),
    }
  }

  /// A BlockRemoved event: the number of blocks removed (unknown hashes are counted). `medium`
  /// as in applyStored.
  #[napi]
  pub fn apply_removed(&self, worker: f64, dp_rank: f64, block_hashes: &[u64], now_ms: f64, medium: Option<String>) -> Result<u32> {
    let key = to_key(worker, dp_rank)?;
    check_now(now_ms)?;
    check_blocks(block_hashes.len(), "blockHashes")?;
    let mut indexer = borrow_in(&self.inner, IndexerMode::Events, "applyRemoved")?;
    let removed = match tier_of(&indexer, medium.as_deref())? {
      None => indexer.apply_removed(key, block_hashes, now_ms),
      Some(t) => indexer.apply_lower_removed(key, t, block_hashes),
    };
    Ok(removed as u32)
  }

  #[napi]
  pub fn apply_cleared(&self, worker: f64, dp_rank: f64) -> Result<()> {
    let key = to_key(worker, dp_rank)?;
    borrow_in(&self.inner, IndexerMode::Events, "applyCleared")?.apply_cleared(key);
    Ok(())
  }

  #[napi]
  pub fn remove_worker(&self, worker: f64) -> Result<()> {
    let worker = to_id(worker, "worker")?;
    borrow(&self.inner)?.remove_worker(worker);
    Ok(())
  }

  /// The handle of this tree for `findMatchesFast(handle, localHashes, out, nowMs?, earlyExit?)`
  /// (bindings/fast.rs), which matches a prompt's local hashes and writes [worker low bits,
  /// worker high bits, dpRank, blocks] per match into an Int32Array `out`, best first (blocks
  /// desc, then worker, then rank), returning the number of matches times 2, plus 1 if a worker
  /// needs its high bits; when `out` is too small nothing is written and `copyMatches` fills a
  /// larger buffer.
  #[napi(getter)]
  pub fn handle(&self) -> u32 {
    self.handle
  }

  /// Copies the last findMatchesFast result into `out` (4 int32s per match); false if too small.
  #[napi]
  pub fn copy_matches(&self, mut out: Int32ArraySlice) -> bool {
    // SAFETY: a synchronous call on the JS thread: no JavaScript touches the buffer meanwhile.
    fast::copy_matches(self.handle, unsafe { out.as_mut() })
  }

  /// Approximate mode: `worker`/`dp_rank` was routed this prompt.
  #[napi]
  pub fn record_routing(&self, worker: f64, dp_rank: f64, local_hashes: &[u64], now_ms: f64) -> Result<()> {
    let key = to_key(worker, dp_rank)?;
    check_now(now_ms)?;
    check_blocks(local_hashes.len(), "localHashes")?;
    borrow_in(&self.inner, IndexerMode::Approximate, "recordRouting")?.record_routing(key, local_hashes, now_ms);
    Ok(())
  }

  /// Approximate mode: drops expired entries; returns how many (0 in events mode).
  #[napi]
  pub fn expire(&self, now_ms: f64) -> Result<u32> {
    check_now(now_ms)?;
    Ok(borrow(&self.inner)?.expire(now_ms) as u32)
  }

  #[napi]
  pub fn snapshot(&self) -> Result<Uint8Array> {
    let indexer = lock(&self.inner);
    Ok(Uint8Array::new(indexer.snapshot()))
  }

  #[napi]
  pub fn stats(&self) -> NativeIndexerStats {
    let s = lock(&self.inner).stats();
    let c = s.counters;
    let r = c.rejected;
    NativeIndexerStats {
      blocks: s.blocks as f64,
      nodes: s.nodes as f64,
      workers: s.workers as f64,
      approx_bytes: s.approx_bytes as f64,
      bytes_per_node: s.bytes_per_node(),
      bytes_per_block: s.bytes_per_block(),
      edges: s.edges as f64,
      events_applied: c.events_applied as f64,
      routings_recorded: c.routings_recorded as f64,
      evictions: c.evictions as f64,
      expired: c.expired as f64,
      rejected: NativeRejections {
        unknown_parent: r.unknown_parent as f64,
        duplicate_hash: r.duplicate_hash as f64,
        self_parent: r.self_parent as f64,
        hash_collision: r.hash_collision as f64,
        index_full: r.index_full as f64,
        malformed: r.malformed as f64,
        unknown_removal: r.unknown_removal as f64,
      },
      lower_tier_blocks: indexer_lower(&self.inner),
    }
  }

  /// Blocks held by (worker, dpRank).
  #[napi]
  pub fn blocks_of(&self, worker: f64, dp_rank: f64) -> Result<f64> {
    Ok(lock(&self.inner).blocks_of(to_key(worker, dp_rank)?) as f64)
  }

  /// The (worker, dpRank) pairs holding at least one block, sorted.
  #[napi]
  pub fn workers(&self) -> Vec<NativeWorkerRank> {
    let keys = lock(&self.inner).workers();
    keys.into_iter().map(|k| NativeWorkerRank { worker: k.worker as f64, dp_rank: k.dp_rank }).collect()
  }
}

impl NativeIndexer {
  pub(crate) fn inner_ref(&self) -> &SharedIndex {
    &self.inner
  }

  pub(crate) fn wrap(indexer: RadixIndexer) -> Self {
    let inner = Arc::new(Mutex::new(indexer));
    let handle = fast::register(Arc::clone(&inner));
    Self { inner, local: Default::default(), decoded: Default::default(), handle }
  }

  /// The tree, for the routing cores that match and record through it.
  pub(crate) fn shared(&self) -> SharedIndex {
    Arc::clone(&self.inner)
  }
}

/// The index, shared by the indexer, its routing cores and the tasks working on it off-thread.
pub type SharedIndex = Arc<Mutex<RadixIndexer>>;

/// Takes the index's lock. A panic while it was held (a bug) does not make the index unusable.
pub fn lock(inner: &SharedIndex) -> MutexGuard<'_, RadixIndexer> {
  inner.lock().unwrap_or_else(PoisonError::into_inner)
}

fn borrow(inner: &SharedIndex) -> Result<MutexGuard<'_, RadixIndexer>> {
  Ok(lock(inner))
}

pub fn borrow_in<'a>(inner: &'a SharedIndex, mode: IndexerMode, call: &str) -> Result<MutexGuard<'a, RadixIndexer>> {
  let indexer = lock(inner);
  if indexer.mode() != mode {
    return Err(coded(Code::WrongMode, format!("{call} needs an indexer in '{}' mode, this one is in '{}' mode", mode.name(), indexer.mode().name())));
  }
  Ok(indexer)
}

fn indexer_lower(inner: &SharedIndex) -> Vec<f64> {
  lock(inner).lower_tiers().held().iter().map(|&n| n as f64).collect()
}

/// The tier an event of the direct API goes to (None: the device).
fn tier_of(indexer: &RadixIndexer, medium: Option<&str>) -> Result<Option<LowerTier>> {
  match medium_tier(medium) {
    Medium::Device => Ok(None),
    Medium::Lower(t) if indexer.lower_tiers_enabled() => Ok(Some(t)),
    Medium::Lower(t) => {
      Err(range_error(format!("this indexer does not keep lower tiers (medium '{}' is on the {} tier)", medium.unwrap_or_default(), t.name())))
    }
    Medium::Unknown => Err(range_error(format!("unknown medium '{}'", medium.unwrap_or_default()))),
  }
}

fn to_id(v: f64, name: &str) -> Result<u64> {
  if v.fract() != 0.0 || !(0.0..=MAX_ID).contains(&v) {
    return Err(range_error(format!("{name} must be an integer in [0, 2^53), got {v}")));
  }
  Ok(v as u64)
}

fn to_count(v: f64, name: &str) -> Result<u64> {
  to_id(v, name)
}

pub fn to_key(worker: f64, dp_rank: f64) -> Result<WorkerKey> {
  let worker = to_id(worker, "worker")?;
  if dp_rank.fract() != 0.0 || !(0.0..=65535.0).contains(&dp_rank) {
    return Err(range_error(format!("dpRank must be an integer in [0, 65535], got {dp_rank}")));
  }
  Ok(WorkerKey { worker, dp_rank: dp_rank as u32 })
}

fn check_now(now_ms: f64) -> Result<()> {
  if !now_ms.is_finite() {
    return Err(range_error(format!("the clock must return a finite number of ms, got {now_ms}")));
  }
  Ok(())
}

fn check_blocks(n: usize, name: &str) -> Result<()> {
  if n > MAX_BLOCKS_PER_CALL {
    return Err(range_error(format!("{name} holds {n} blocks, more than the {MAX_BLOCKS_PER_CALL} accepted per call")));
  }
  Ok(())
}
