//! The KV radix indexer: which (worker, dp_rank) pairs hold which KV blocks, so a prompt can be
//! matched against every worker's cache in one walk. A compressed radix tree: edges hold runs of
//! blocks, and each (worker, dp_rank) holds a prefix of each edge. Pure Rust: time is passed in
//! (`now_ms`). Invariants and design in README.md.
//!
//! - tree.rs      edges (runs of block keys), block ids, the children table; split, extend, truncate
//! - positions.rs where each block id is, in chunks that never move
//! - holders.rs   who holds which prefix of an edge (full mask, partial cutoffs)
//! - paths.rs     holding and releasing blocks: coverage, splits at holes, trimming unused blocks
//! - workers.rs   (worker, dp_rank) slots and their order
//! - events.rs    events mode: engine block hashes -> blocks, stored / removed / cleared
//! - lower.rs     events about lower tiers (host, disk, external) into crate::tiers beside the tree
//! - engine_table.rs  one slot's engine hashes, in prefetchable cache-line groups
//! - matches.rs   find_matches_into: the prefix walk
//! - approx.rs    approximate mode: routed sequences with a TTL and a size cap
//! - evict.rs     events mode's optional cap: least recently matched leaves first
//! - snapshot.rs  versioned, checksummed dump and restore (snapshot/v1.rs reads the old format)
//! - stats.rs     counters and the stats report

mod approx;
mod engine_table;
mod events;
mod evict;
mod holders;
mod lower;
mod matches;
mod paths;
mod positions;
mod snapshot;
mod stats;
mod tree;
mod workers;

#[cfg(test)]
pub(crate) mod perf;
#[cfg(test)]
mod tests;

pub use snapshot::SNAPSHOT_VERSION;
pub use stats::{Counters, IndexerStats, RejectReason, Rejections};
pub use workers::WorkerKey;

use crate::hash::Window;
use approx::ApproxState;
use events::EventsState;
#[cfg(test)]
use tree::EdgeId;
use tree::{BlockId, Tree, ROOT_BLOCK};
use workers::{Slot, Slots};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexerMode {
  /// Fed by the engines' KV events.
  Events,
  /// No events: each routing decision is recorded as if the worker now held the prompt.
  Approximate,
}

impl IndexerMode {
  pub fn name(self) -> &'static str {
    match self {
      Self::Events => "events",
      Self::Approximate => "approximate",
    }
  }

  pub fn parse(name: &str) -> Option<Self> {
    match name {
      "events" => Some(Self::Events),
      "approximate" => Some(Self::Approximate),
      _ => None,
    }
  }
}

/// What the tree keys blocks by. Indexes built here key them by their local hash (a walk then
/// compares the prompt's hashes as they are). An index restored from a version 1 snapshot, which
/// kept only each block's chained key, keys them by that chain (`chain_key` of the parent's key
/// and the local hash): it answers the same, at the cost of chaining the prompt's keys first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Keying {
  Local,
  Chained,
}

pub const DEFAULT_TTL_MS: f64 = 120_000.0;
pub const DEFAULT_APPROX_MAX_BLOCKS: u64 = 1 << 20;
pub const DEFAULT_PRUNE_FRACTION: f64 = 0.8;
pub const MAX_BLOCK_SIZE: u32 = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexerConfig {
  pub block_size: u32,
  pub mode: IndexerMode,
  /// Events mode: cap on indexed (worker, dp_rank, block) pairs; None = unbounded (as Dynamo).
  pub max_blocks: Option<u64>,
  /// Approximate mode: how long a recorded block is assumed to stay cached.
  pub ttl_ms: f64,
  /// Approximate mode: cap on indexed pairs.
  pub approx_max_blocks: u64,
  /// A cap, once passed, prunes down to this fraction of it (both modes).
  pub prune_fraction: f64,
  /// Which tokens a block's hash covers (EAGLE engines hash one token more): stored events are
  /// hashed with it, and the routing cores built over the index hash prompts with it.
  pub window: Window,
}

impl IndexerConfig {
  pub fn new(block_size: u32, mode: IndexerMode) -> Self {
    Self {
      block_size,
      mode,
      max_blocks: None,
      ttl_ms: DEFAULT_TTL_MS,
      approx_max_blocks: DEFAULT_APPROX_MAX_BLOCKS,
      prune_fraction: DEFAULT_PRUNE_FRACTION,
      window: Window::Plain,
    }
  }

  pub fn validate(&self) -> Result<(), String> {
    if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
      return Err(format!("blockSize must be an integer in 1..={MAX_BLOCK_SIZE}, got {}", self.block_size));
    }
    if self.max_blocks == Some(0) {
      return Err("maxBlocks must be at least 1".into());
    }
    if !(self.ttl_ms.is_finite() && self.ttl_ms > 0.0) {
      return Err(format!("ttlMs must be a positive finite number, got {}", self.ttl_ms));
    }
    if self.approx_max_blocks == 0 {
      return Err("approxMaxBlocks must be at least 1".into());
    }
    if !(self.prune_fraction > 0.0 && self.prune_fraction <= 1.0) {
      return Err(format!("pruneFraction must be in (0, 1], got {}", self.prune_fraction));
    }
    Ok(())
  }

  /// Pair count a cap of `cap` prunes down to.
  fn prune_target(&self, cap: u64) -> u64 {
    ((cap as f64) * self.prune_fraction).floor() as u64
  }
}

/// Per-mode state: engine-key maps (events) or per-pair timestamps (approximate).
#[derive(Clone)]
enum ModeState {
  Events(EventsState),
  Approx(ApproxState),
}

/// Buffers reused across calls.
#[derive(Default, Clone)]
struct Scratch {
  keys: Vec<u64>,
  /// Existing blocks along a stored path (NEW where absent).
  blocks: Vec<BlockId>,
  ids: Vec<BlockId>,
  path: Vec<(BlockId, bool)>,
  slots: Vec<Slot>,
  sorted: Vec<u64>,
  /// A stored event's engine hashes as its slot's table holds them (events.rs, check_stored).
  claims: Vec<engine_table::Claim>,
  /// Blocks being released: (edge, position, block).
  located: Vec<(tree::EdgeId, u32, BlockId)>,
  walk: matches::WalkScratch,
}

#[derive(Clone)]
pub struct RadixIndexer {
  cfg: IndexerConfig,
  keying: Keying,
  tree: Tree,
  slots: Slots,
  state: ModeState,
  counters: Counters,
  scratch: Scratch,
  /// Bumped each time a worker is removed: work started before sees the change and stops.
  epochs: rustc_hash::FxHashMap<u64, u64>,
  /// Blocks on lower tiers (events mode, unless turned off): not in the tree, not in snapshots.
  lower: crate::tiers::LowerTierIndex,
  lower_enabled: bool,
}

impl std::fmt::Debug for RadixIndexer {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    let s = self.stats();
    f.debug_struct("RadixIndexer").field("config", &self.cfg).field("blocks", &s.blocks).field("nodes", &s.nodes).finish()
  }
}

impl RadixIndexer {
  /// # Panics
  /// On an invalid configuration; `try_new` reports it instead.
  pub fn new(cfg: IndexerConfig) -> Self {
    Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid indexer configuration: {e}"))
  }

  pub fn try_new(cfg: IndexerConfig) -> Result<Self, String> {
    cfg.validate()?;
    let state = match cfg.mode {
      IndexerMode::Events => ModeState::Events(EventsState::new(cfg.max_blocks.is_some())),
      IndexerMode::Approximate => ModeState::Approx(ApproxState::default()),
    };
    Ok(Self {
      cfg,
      keying: Keying::Local,
      tree: Tree::new(),
      slots: Slots::default(),
      state,
      counters: Counters::default(),
      scratch: Scratch::default(),
      epochs: Default::default(),
      lower: Default::default(),
      lower_enabled: cfg.mode == IndexerMode::Events,
    })
  }

  pub fn config(&self) -> &IndexerConfig {
    &self.cfg
  }

  pub fn block_size(&self) -> u32 {
    self.cfg.block_size
  }

  pub fn mode(&self) -> IndexerMode {
    self.cfg.mode
  }

  pub fn window(&self) -> Window {
    self.cfg.window
  }

  pub fn keying(&self) -> Keying {
    self.keying
  }

  /// Drops every block of (worker, dp_rank) and forgets the pair. Counted as an applied event.
  pub fn apply_cleared(&mut self, key: WorkerKey) {
    if let Some(slot) = self.slots.get(key) {
      self.drop_slot(slot);
    }
    // The engine dropped its cache: whatever it had offloaded is not trusted either.
    self.lower.clear(key);
    self.counters.events_applied += 1;
  }

  /// How many times `worker` was removed (0 if never).
  pub fn worker_epoch(&self, worker: u64) -> u64 {
    self.epochs.get(&worker).copied().unwrap_or(0)
  }

  /// Drops every dp rank of `worker`.
  pub fn remove_worker(&mut self, worker: u64) {
    *self.epochs.entry(worker).or_default() += 1;
    for slot in self.slots.of_worker(worker) {
      self.drop_slot(slot);
    }
    self.lower.remove_worker(worker);
  }

  /// Removes every block a slot holds, then the slot.
  fn drop_slot(&mut self, slot: Slot) {
    let blocks = match &mut self.state {
      ModeState::Events(ev) => ev.take_slot(slot),
      ModeState::Approx(ap) => ap.take_slot(slot),
    };
    self.release_all(slot, &blocks);
    self.slots.release(slot);
  }

  pub fn stats(&self) -> IndexerStats {
    let mode_bytes = match &self.state {
      ModeState::Events(ev) => ev.bytes(),
      ModeState::Approx(ap) => ap.bytes(),
    };
    IndexerStats {
      blocks: self.slots.total_held(),
      nodes: self.tree.len() as u64,
      edges: self.tree.edge_count() as u64,
      workers: self.slots.len() as u64,
      approx_bytes: (self.tree.bytes() + self.slots.bytes() + mode_bytes) as u64,
      counters: self.counters,
    }
  }

  /// Blocks (key, dp_rank) holds.
  pub fn blocks_of(&self, key: WorkerKey) -> u64 {
    self.slots.get(key).map_or(0, |s| self.slots.held(s))
  }

  /// Every (worker, dp_rank) pair holding at least one block.
  pub fn workers(&self) -> Vec<WorkerKey> {
    let mut keys: Vec<WorkerKey> = self.slots.iter().map(|(_, k)| k).collect();
    keys.sort_unstable();
    keys
  }

  /// The tree's keys for `local` hashes of blocks following `parent` (ROOT_BLOCK: the root):
  /// the local hashes themselves under local keying (nothing copied), else chained into `out`.
  fn tree_keys<'a>(tree: &Tree, keying: Keying, parent: BlockId, local: &'a [u64], out: &'a mut Vec<u64>) -> &'a [u64] {
    match keying {
      Keying::Local => local,
      Keying::Chained => {
        out.clear();
        let mut k = if parent == ROOT_BLOCK { tree::ROOT_KEY } else { tree.key_of(parent) };
        out.extend(local.iter().map(|&l| {
          k = tree::chain_key(k, l);
          k
        }));
        out
      }
    }
  }

  #[cfg(test)]
  fn check(&self) {
    self.tree.check_structure();
    self.tree.check_holders();
    let mut held = vec![0u64; self.slots.bound()];
    let mut holders = Vec::new();
    for id in 1..self.tree.edges.len() as EdgeId {
      if self.tree.edge(id).is_free() {
        continue;
      }
      holders.clear();
      self.tree.holders_into(id, &mut holders);
      for &(s, c) in &holders {
        held[s as usize] += c as u64;
      }
    }
    for (slot, key) in self.slots.iter() {
      assert_eq!(held[slot as usize], self.slots.held(slot), "held count of {key:?}");
      assert!(held[slot as usize] > 0, "{key:?} holds nothing but keeps its slot");
    }
    assert_eq!(held.iter().sum::<u64>(), self.slots.total_held());
    match &self.state {
      ModeState::Events(ev) => ev.check(&self.tree, &self.slots),
      ModeState::Approx(ap) => ap.check(&self.tree, &self.slots),
    }
  }
}
