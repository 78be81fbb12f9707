//! All active bookings of one worker pool, by request id, and the load of every (worker, rank).
//!
//! This router's bookings are keyed by request id; those other router replicas announced, by
//! (origin replica, request id) (`origins.rs`). Each booking lives in a slot (reused after free) so the hot path does not allocate beyond the
//! request id; its prompt blocks live once per rank, in the rank's trie of chains. A rank's `RankLoad` stays while the pool lists the rank or
//! while a booking still holds load there (a removed worker's bookings are released exactly once,
//! when they are freed or expire).

use rustc_hash::FxHashMap;

use super::drain::DrainRate;
use super::origins::{Origins, RemoteStats};
use super::rank_load::{ChainEnd, HolderState, RankLoad, FULL_WEIGHT};
use super::rank_prefixes::{PrefixWalk, RankPrefixes};
use super::WorkerKey;

/// Index of a rank's load in the book; stable while the rank is listed or loaded.
pub type RankId = u32;

#[derive(Debug, PartialEq, Eq)]
pub enum BookError {
  DuplicateRequest,
}

/// What to book for one request on its chosen rank.
pub struct BookRequest<'a> {
  pub request_id: &'a str,
  pub rank: RankId,
  /// Local hashes of the prompt's complete blocks, from block 0 (the trie names each by its path).
  pub block_hashes: &'a [u64],
  pub prompt_tokens: u64,
  pub overlap_blocks: u32,
  pub expected_output_tokens: Option<u64>,
  /// The priority class its engine schedules it by (0 for an engine serving first come, first
  /// served): the rank keeps its queued prefill by class.
  pub priority: i32,
  pub now_ms: f64,
}

#[derive(Debug, Default)]
struct Booking {
  rank: RankId,
  /// Where its prompt chain ends in the rank's trie.
  chain: ChainEnd,
  /// Where it ends in the trie of every rank's chains (`rank_prefixes.rs`).
  shared_chain: ChainEnd,
  prompt_tokens: u64,
  /// Outstanding prefill tokens (0 once prefill completed).
  prefill_tokens: u64,
  prefill_done: bool,
  output_tokens: u64,
  expected_output_tokens: Option<u64>,
  touched_ms: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BookStats {
  pub booked: u64,
  pub freed: u64,
  pub expired: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankSnapshot {
  pub key: WorkerKey,
  pub prefill_tokens: u64,
  pub decode_blocks: f64,
  pub active_blocks: u64,
  pub requests: u32,
}

#[derive(Debug, Default)]
pub struct LoadBook {
  block_size: u64,
  ranks: Vec<RankLoad>,
  rank_keys: Vec<WorkerKey>,
  rank_listed: Vec<bool>,
  rank_ids: FxHashMap<WorkerKey, RankId>,
  /// Every rank's active chains in one trie: each rank's active prefix of a prompt in one walk.
  prefixes: RankPrefixes,
  free_rank_ids: Vec<RankId>,
  bookings: Vec<Booking>,
  holders: Vec<HolderState>,
  free_slots: Vec<u32>,
  by_id: FxHashMap<Box<str>, u32>,
  /// Bookings other router replicas announced, by origin replica.
  remote: Origins,
  remote_stats: RemoteStats,
  total_prefill_tokens: u64,
  drain: DrainRate,
  stats: BookStats,
  scratch_slots: Vec<u32>,
}

impl LoadBook {
  pub fn new(block_size: u32) -> Self {
    assert!(block_size > 0, "block size must be positive");
    Self { block_size: block_size as u64, ..Default::default() }
  }

  pub fn block_size(&self) -> u64 {
    self.block_size
  }

  // ---- ranks -------------------------------------------------------------------------------

  /// The pool lists `key`: returns its rank id (creating its load if needed).
  pub fn list_rank(&mut self, key: WorkerKey) -> RankId {
    let id = self.rank_id_or_create(key);
    self.rank_listed[id as usize] = true;
    id
  }

  /// The pool no longer lists `key`; its load stays until its bookings are gone.
  pub fn unlist_rank(&mut self, key: WorkerKey) {
    if let Some(&id) = self.rank_ids.get(&key) {
      self.rank_listed[id as usize] = false;
      self.recycle_rank_if_unused(id);
    }
  }

  /// The rank id of `key` whether or not the pool lists it: another replica may book a worker this
  /// one does not list, whose load then lives, unlisted, while booked. A rank nothing books is
  /// recycled by the next `book_remote` refused or `unlist_rank`.
  pub fn rank_for(&mut self, key: WorkerKey) -> RankId {
    self.rank_id_or_create(key)
  }

  pub fn rank(&self, id: RankId) -> &RankLoad {
    &self.ranks[id as usize]
  }

  pub fn rank_key(&self, id: RankId) -> WorkerKey {
    self.rank_keys[id as usize]
  }

  fn rank_id_or_create(&mut self, key: WorkerKey) -> RankId {
    if let Some(&id) = self.rank_ids.get(&key) {
      return id;
    }
    let id = match self.free_rank_ids.pop() {
      Some(id) => {
        self.rank_keys[id as usize] = key;
        id
      }
      None => {
        self.ranks.push(RankLoad::default());
        self.rank_keys.push(key);
        self.rank_listed.push(false);
        (self.ranks.len() - 1) as RankId
      }
    };
    self.rank_ids.insert(key, id);
    id
  }

  fn recycle_rank_if_unused(&mut self, id: RankId) {
    let i = id as usize;
    if !self.rank_listed[i] && self.ranks[i].is_idle() {
      debug_assert!(self.ranks[i].is_empty());
      self.rank_ids.remove(&self.rank_keys[i]);
      self.free_rank_ids.push(id);
    }
  }

  // ---- bookings ----------------------------------------------------------------------------

  pub fn contains(&self, request_id: &str) -> bool {
    self.by_id.contains_key(request_id)
  }

  /// Prefill tokens a request would book with `overlap_blocks` cached (never negative).
  pub fn prefill_tokens_for(&self, prompt_tokens: u64, overlap_blocks: u32) -> u64 {
    prompt_tokens.saturating_sub(overlap_blocks as u64 * self.block_size)
  }

  pub fn book(&mut self, req: &BookRequest) -> Result<(), BookError> {
    self.book_along(req, None)
  }

  /// `book` right after `active_prefixes` of the same block hashes recorded `walk`: the tries
  /// follow it instead of comparing the hashes again (ignored if the book changed since).
  pub fn book_along(&mut self, req: &BookRequest, walk: Option<&PrefixWalk>) -> Result<(), BookError> {
    if self.by_id.contains_key(req.request_id) {
      return Err(BookError::DuplicateRequest);
    }
    let slot = self.fill_slot(req, walk);
    self.by_id.insert(req.request_id.into(), slot);
    self.stats.booked += 1;
    Ok(())
  }

  /// A booking another router replica (`origin`) made, applied to the same ranks: its request id
  /// is the origin's, unique per origin (not against this router's own ids).
  pub fn book_remote(&mut self, origin: &str, req: &BookRequest) -> Result<(), BookError> {
    if self.remote.table(origin).is_some_and(|t| t.contains_key(req.request_id)) {
      self.recycle_rank_if_unused(req.rank);
      return Err(BookError::DuplicateRequest);
    }
    let slot = self.fill_slot(req, None);
    self.remote.table_or_create(origin).insert(req.request_id.into(), slot);
    self.remote_stats.booked += 1;
    Ok(())
  }

  /// Takes a slot for the booking and puts its load on its rank.
  fn fill_slot(&mut self, req: &BookRequest, walk: Option<&PrefixWalk>) -> u32 {
    let slot = match self.free_slots.pop() {
      Some(s) => s,
      None => {
        self.bookings.push(Booking::default());
        self.holders.push(HolderState::default());
        (self.bookings.len() - 1) as u32
      }
    };
    let prefill = self.prefill_tokens_for(req.prompt_tokens, req.overlap_blocks);
    let b = &mut self.bookings[slot as usize];
    b.rank = req.rank;
    b.prompt_tokens = req.prompt_tokens;
    b.prefill_tokens = prefill;
    b.prefill_done = false;
    b.output_tokens = 0;
    b.expected_output_tokens = req.expected_output_tokens.filter(|&n| n > 0);
    b.touched_ms = req.now_ms;
    self.holders[slot as usize] = HolderState { exclusive: 0, weight: FULL_WEIGHT, output_blocks: 0 };

    let rank = &mut self.ranks[req.rank as usize];
    rank.add_request(slot, prefill, req.priority, req.now_ms);
    // A current walk of this prompt knows how far it is active on the rank: no compare needed.
    let known = walk.filter(|w| self.prefixes.is_current(w, req.block_hashes.len())).map(|w| w.prefix(req.rank) as usize);
    self.bookings[slot as usize].chain = rank.hold(req.block_hashes, slot, &mut self.holders, known);
    self.bookings[slot as usize].shared_chain = self.prefixes.hold(req.rank, req.block_hashes, walk);
    self.total_prefill_tokens += prefill;
    slot
  }

  /// The request produced its first token: its prefill tokens leave the queue.
  /// True the first time for a known request, false otherwise.
  pub fn mark_prefill_completed(&mut self, request_id: &str, now_ms: f64) -> bool {
    let Some(&slot) = self.by_id.get(request_id) else { return false };
    self.mark_slot_completed(slot, now_ms)
  }

  /// `mark_prefill_completed` for a booking of another replica.
  pub fn mark_remote_prefill_completed(&mut self, origin: &str, request_id: &str, now_ms: f64) -> bool {
    let Some(&slot) = self.remote.table(origin).and_then(|t| t.get(request_id)) else { return false };
    self.mark_slot_completed(slot, now_ms)
  }

  fn mark_slot_completed(&mut self, slot: u32, now_ms: f64) -> bool {
    let b = &mut self.bookings[slot as usize];
    b.touched_ms = now_ms;
    if b.prefill_done {
      return false;
    }
    self.complete_prefill(slot, now_ms);
    true
  }

  fn complete_prefill(&mut self, slot: u32, now_ms: f64) {
    let b = &mut self.bookings[slot as usize];
    let tokens = std::mem::take(&mut b.prefill_tokens);
    b.prefill_done = true;
    self.ranks[b.rank as usize].end_prefill(slot, tokens, now_ms, true);
    self.total_prefill_tokens -= tokens;
    self.drain.record(now_ms, tokens);
  }

  /// Output-block growth: `tokens` more output tokens. A new block is booked each time the
  /// sequence fills one; with an expected output length the request's own blocks weigh
  /// 1 - output / expected (down to 0). Generating output implies prefill completed.
  /// False for an unknown request.
  pub fn add_output_tokens(&mut self, request_id: &str, tokens: u64, now_ms: f64) -> bool {
    let Some(&slot) = self.by_id.get(request_id) else { return false };
    if !self.bookings[slot as usize].prefill_done {
      self.complete_prefill(slot, now_ms);
    }
    let bs = self.block_size;
    let b = &mut self.bookings[slot as usize];
    b.touched_ms = now_ms;
    b.output_tokens = b.output_tokens.saturating_add(tokens);
    let grown = (b.prompt_tokens.saturating_add(b.output_tokens)) / bs - b.prompt_tokens / bs;
    let weight = match b.expected_output_tokens {
      Some(expected) => FULL_WEIGHT * (expected - b.output_tokens.min(expected)) / expected,
      None => FULL_WEIGHT,
    };
    let rank = &mut self.ranks[b.rank as usize];
    let state = self.holders[slot as usize];
    if grown > state.output_blocks {
      rank.grow_output(slot, grown - state.output_blocks, &mut self.holders);
    }
    if weight != state.weight {
      rank.reweigh(slot, weight, &mut self.holders);
    }
    true
  }

  /// Releases everything the request booked. False when unknown or already freed.
  pub fn free(&mut self, request_id: &str, now_ms: f64) -> bool {
    let Some(slot) = self.by_id.remove(request_id) else { return false };
    self.release_slot(slot, now_ms);
    self.stats.freed += 1;
    true
  }

  /// `free` for a booking of another replica.
  pub fn free_remote(&mut self, origin: &str, request_id: &str, now_ms: f64) -> bool {
    let Some(slot) = self.remote.table_mut(origin).and_then(|t| t.remove(request_id)) else { return false };
    self.release_slot(slot, now_ms);
    self.remote_stats.freed += 1;
    true
  }

  /// Releases every booking of the replica `origin` (it went silent, or it re-announces its
  /// bookings from scratch). Returns how many.
  pub fn drop_origin(&mut self, origin: &str, now_ms: f64) -> usize {
    let slots = self.remote.remove(origin);
    for &slot in &slots {
      self.release_slot(slot, now_ms);
    }
    self.remote_stats.dropped += slots.len() as u64;
    slots.len()
  }

  fn release_slot(&mut self, slot: u32, now_ms: f64) {
    let b = &mut self.bookings[slot as usize];
    let rank_id = b.rank;
    let prefill = std::mem::take(&mut b.prefill_tokens);
    let in_prefill = !std::mem::replace(&mut b.prefill_done, true);
    let chain = b.chain.take();
    self.prefixes.release(rank_id, b.shared_chain.take());
    let rank = &mut self.ranks[rank_id as usize];
    if in_prefill {
      rank.end_prefill(slot, prefill, now_ms, false);
    }
    self.total_prefill_tokens -= prefill;
    // Tokens of a request freed before its prefill also leave the queue.
    self.drain.record(now_ms, prefill);
    rank.release(chain, slot, &mut self.holders);
    rank.drop_output(slot, &mut self.holders);
    rank.remove_request();
    debug_assert_eq!(self.holders[slot as usize].exclusive, 0);
    self.free_slots.push(slot);
    self.recycle_rank_if_unused(rank_id);
  }

  /// Frees every booking untouched for `stale_ms` or more. Returns how many expired.
  pub fn expire_stale(&mut self, now_ms: f64, stale_ms: f64) -> usize {
    let mut stale = std::mem::take(&mut self.scratch_slots);
    stale.clear();
    take_stale(&mut self.by_id, &self.bookings, now_ms - stale_ms, &mut stale);
    let local = stale.len();
    for table in self.remote.tables_mut() {
      take_stale(table, &self.bookings, now_ms - stale_ms, &mut stale);
    }
    for &slot in &stale {
      self.release_slot(slot, now_ms);
    }
    let n = stale.len();
    self.stats.expired += local as u64;
    self.remote_stats.expired += (n - local) as u64;
    self.scratch_slots = stale;
    n
  }

  /// How many leading blocks of `block_hashes` are active on each rank (held by one of its
  /// bookings): `out[rank id]`, one entry per rank id. As `rank(id).active_prefix`, for every
  /// rank in one walk: `walk.prefix(rank id)`. `book_along` follows it.
  pub fn active_prefixes(&self, block_hashes: &[u64], walk: &mut PrefixWalk) {
    self.prefixes.walk(block_hashes, self.ranks.len(), walk);
  }

  // ---- totals ------------------------------------------------------------------------------

  pub fn total_prefill_tokens(&self) -> u64 {
    self.total_prefill_tokens
  }

  /// This router's own active bookings.
  pub fn active_requests(&self) -> usize {
    self.by_id.len()
  }

  /// Active bookings of other replicas.
  pub fn remote_requests(&self) -> usize {
    self.remote.active()
  }

  pub fn remote_stats(&self) -> RemoteStats {
    self.remote_stats
  }

  /// (origin replica, bookings held) for every replica with bookings here, by name.
  pub fn remote_origins(&self) -> Vec<(&str, usize)> {
    self.remote.counts()
  }

  pub fn stats(&self) -> BookStats {
    self.stats
  }

  /// Retry hint for a refused request `excess_tokens` over the queue cap.
  pub fn retry_after_ms(&self, excess_tokens: u64, now_ms: f64) -> f64 {
    self.drain.retry_after_ms(excess_tokens, now_ms)
  }

  /// Sum of decode blocks (with decay) over all ranks, in thousandths (exact).
  pub fn total_decode_blocks_milli(&self) -> u64 {
    self.rank_ids.values().map(|&id| self.ranks[id as usize].decode_blocks_milli()).sum()
  }

  /// Load of every listed or loaded rank, ordered by (worker, dp_rank).
  pub fn snapshot(&self) -> Vec<RankSnapshot> {
    let mut out: Vec<RankSnapshot> = self
      .rank_ids
      .values()
      .map(|&id| {
        let r = &self.ranks[id as usize];
        RankSnapshot {
          key: self.rank_keys[id as usize],
          prefill_tokens: r.prefill_tokens(),
          decode_blocks: r.decode_blocks(),
          active_blocks: r.active_blocks(),
          requests: r.requests(),
        }
      })
      .collect();
    out.sort_by_key(|s| s.key);
    out
  }

  /// Every rank is empty and no booking remains (the exactly-once check of the tests).
  pub fn is_empty(&self) -> bool {
    self.by_id.is_empty()
      && self.remote.active() == 0
      && self.total_prefill_tokens == 0
      && self.prefixes.is_empty()
      && self.rank_ids.values().all(|&id| self.ranks[id as usize].is_empty())
  }
}

/// Moves the slots of bookings untouched since `cutoff_ms` (inclusive) out of `table` into `out`.
fn take_stale(table: &mut FxHashMap<Box<str>, u32>, bookings: &[Booking], cutoff_ms: f64, out: &mut Vec<u32>) {
  table.retain(|_, &mut slot| {
    let stale = bookings[slot as usize].touched_ms <= cutoff_ms;
    if stale {
      out.push(slot);
    }
    !stale
  });
}

#[cfg(test)]
mod tests;
