//! Load booked on one (worker, dp_rank): outstanding prefill tokens and decode blocks.
//!
//! Decode blocks are the active requests' complete prompt blocks, each named by its place in the
//! rank's trie (its prefix, then its hash), counted once per rank however many requests share them
//! (a trie of chains, see `chains.rs`), plus each request's own output blocks. A request's weight (in thousandths, see `FULL_WEIGHT`) decays
//! toward 0 as its output nears the expected length; it applies to the blocks only that request
//! holds (its output blocks and the prompt blocks nobody else shares), because shared blocks
//! outlive it. All sums are integers, so the load returns to exactly zero when every request is
//! gone.

use super::chains::{common_prefix, Chains, SegId, NONE};

/// Weight of a block that counts in full, in thousandths of a block.
pub const FULL_WEIGHT: u64 = 1000;

/// Per-booking state the rank needs while it shares blocks: indexed by booking slot.
#[derive(Clone, Copy, Debug, Default)]
pub struct HolderState {
  /// Blocks this booking alone holds on its rank (prompt blocks with one holder).
  pub exclusive: u64,
  /// Current weight in thousandths (FULL_WEIGHT until the output decays it).
  pub weight: u64,
  /// Output blocks grown so far (never shared).
  pub output_blocks: u64,
}

/// Where a booking's chain ends in its rank's trie (`None`: no complete block).
pub type ChainEnd = Option<SegId>;

#[derive(Debug, Default)]
pub struct RankLoad {
  chains: Chains,
  prefill_tokens: u64,
  output_blocks: u64,
  /// Prompt blocks with a single holder (in segments passed by one booking).
  exclusive_blocks: u64,
  /// Sum over bookings of weight x (exclusive + output blocks).
  weighted_own_milli: u64,
  requests: u32,
  /// Requests whose prefill has not completed (the rest are decoding).
  prefilling: u32,
  /// Since when the rank has been computing its booked prefill queue unobserved: set when the
  /// queue fills from empty, and at each first token seen here (the engine's progress, observed).
  prefill_since_ms: f64,
  /// The queue filled while the rank was decoding: its first step starts when the decode step in
  /// flight ends, and whatever arrives before then joins it.
  prefill_after_step: bool,
  /// The bookings with prefill tokens queued, in booking order (first come, first served): what
  /// an engine scheduling by priority has started, and what a class waits for.
  queue: Vec<QueuedPrefill>,
}

/// One booking's outstanding prefill on its rank.
#[derive(Clone, Copy, Debug)]
pub struct QueuedPrefill {
  pub slot: u32,
  /// The priority class its engine schedules it by (0 for first come, first served).
  pub class: i32,
  pub tokens: u64,
}

impl RankLoad {
  pub fn prefill_tokens(&self) -> u64 {
    self.prefill_tokens
  }

  pub fn requests(&self) -> u32 {
    self.requests
  }

  /// Booked requests still in prefill (no first token yet).
  pub fn prefilling(&self) -> u32 {
    self.prefilling
  }

  /// Booked requests past their prefill: each decodes one token per engine step.
  pub fn decoding(&self) -> u32 {
    self.requests - self.prefilling
  }

  /// The bookings with prefill queued here, in booking order.
  pub fn queue(&self) -> &[QueuedPrefill] {
    &self.queue
  }

  /// Queued prefill tokens of priority class `class` or higher (what the tests check the queue by).
  #[cfg(test)]
  pub fn prefill_tokens_from(&self, class: i32) -> u64 {
    self.queue.iter().filter(|q| q.class >= class).map(|q| q.tokens).sum()
  }

  /// Since when the booked prefill queue has been in progress without a first token seen here
  /// (meaningful while `prefill_tokens() > 0`): the engine's progress on it is the model's
  /// estimate of what it computed since.
  pub fn prefill_since_ms(&self) -> f64 {
    self.prefill_since_ms
  }

  /// Whether the queue's first step waits for a decode step in flight since `prefill_since_ms`.
  pub fn prefill_after_step(&self) -> bool {
    self.prefill_after_step
  }

  /// Distinct blocks held (prompt blocks counted once, plus output blocks), without decay.
  pub fn active_blocks(&self) -> u64 {
    self.chains.blocks() + self.output_blocks
  }

  /// Decode blocks with decay, in thousandths of a block (exact integer).
  pub fn decode_blocks_milli(&self) -> u64 {
    (self.chains.blocks() - self.exclusive_blocks) * FULL_WEIGHT + self.weighted_own_milli
  }

  /// Decode blocks with decay: the figure the cost and the busy threshold use.
  pub fn decode_blocks(&self) -> f64 {
    self.decode_blocks_milli() as f64 / FULL_WEIGHT as f64
  }

  pub fn is_idle(&self) -> bool {
    self.requests == 0
  }

  /// How many leading blocks of `block_hashes` are already active here.
  pub fn active_prefix(&self, block_hashes: &[u64]) -> usize {
    self.chains.prefix_len(block_hashes)
  }

  pub(crate) fn add_request(&mut self, slot: u32, prefill_tokens: u64, class: i32, now_ms: f64) {
    // An empty queue starts now: an idle engine takes up a request as it arrives, a decoding one
    // after its step in flight.
    if self.prefill_tokens == 0 && prefill_tokens > 0 {
      self.prefill_since_ms = now_ms;
      self.prefill_after_step = self.decoding() > 0;
    }
    self.requests += 1;
    self.prefilling += 1;
    self.prefill_tokens += prefill_tokens;
    if prefill_tokens > 0 {
      self.queue.push(QueuedPrefill { slot, class, tokens: prefill_tokens });
    }
  }

  pub(crate) fn remove_request(&mut self) {
    self.requests -= 1;
  }

  /// A booked request's prefill ends: `observed` when its first token came (the queue's progress
  /// is known up to now: the next step starts now), not when it was freed before.
  pub(crate) fn end_prefill(&mut self, slot: u32, tokens: u64, now_ms: f64, observed: bool) {
    self.prefilling -= 1;
    self.prefill_tokens -= tokens;
    if tokens > 0 {
      // Usually the queue's head: prefills end mostly in booking order.
      let i = self.queue.iter().position(|q| q.slot == slot).expect("a queued booking");
      debug_assert_eq!(self.queue[i].tokens, tokens);
      self.queue.remove(i);
    }
    if observed {
      // A first token ends a step: the next one starts now.
      self.prefill_since_ms = now_ms;
      self.prefill_after_step = false;
    }
  }

  /// Booking `slot` starts holding the chain `seq` (block hashes from block 0). `known`: how
  /// many leading blocks of `seq` are active here, if known (then nothing is compared: the chain
  /// diverges exactly there).
  pub(crate) fn hold(&mut self, seq: &[u64], slot: u32, holders: &mut [HolderState], known: Option<usize>) -> ChainEnd {
    if seq.is_empty() {
      return None;
    }
    let mut parent = NONE;
    let mut pos = 0;
    loop {
      let Some(s) = self.chains.child(parent, seq[pos]) else {
        let id = self.chains.add(parent, &seq[pos..], slot);
        self.gain_exclusive(slot, (seq.len() - pos) as u64, holders);
        return Some(id);
      };
      let len = self.chains.seg(s).hashes.len();
      let k = match known {
        Some(active) => len.min(active - pos),
        None => common_prefix(&self.chains.seg(s).hashes, &seq[pos..]),
      };
      debug_assert_eq!(k, common_prefix(&self.chains.seg(s).hashes, &seq[pos..]), "a wrong known prefix");
      // Diverging (or ending) inside the segment: its head becomes a segment of its own.
      let at = if k < len { self.chains.split(s, k) } else { s };
      self.pass(at, slot, holders);
      pos += k;
      if pos == seq.len() {
        self.chains.seg_mut(at).ends += 1;
        return Some(at);
      }
      parent = at;
    }
  }

  /// Booking `slot` stops holding the chain it held (ending at `end`).
  pub(crate) fn release(&mut self, end: ChainEnd, slot: u32, holders: &mut [HolderState]) {
    let Some(end) = end else { return };
    self.chains.seg_mut(end).ends -= 1;
    let mut cur = end;
    while cur != NONE {
      let seg = self.chains.seg_mut(cur);
      seg.count -= 1;
      seg.xor_slots ^= slot;
      let (count, remaining, parent, len) = (seg.count, seg.xor_slots, seg.parent, seg.hashes.len() as u64);
      match count {
        0 => {
          debug_assert_eq!(remaining, 0);
          self.chains.remove(cur);
          self.lose_exclusive(slot, len, holders);
        }
        1 => self.gain_exclusive(remaining, len, holders),
        _ => {}
      }
      cur = parent;
    }
  }

  /// One more booking passes through segment `s`.
  fn pass(&mut self, s: SegId, slot: u32, holders: &mut [HolderState]) {
    let seg = self.chains.seg_mut(s);
    seg.count += 1;
    seg.xor_slots ^= slot;
    if seg.count == 2 {
      // The previous sole holder is the XOR with the newcomer removed.
      let (previous, len) = (seg.xor_slots ^ slot, seg.hashes.len() as u64);
      self.lose_exclusive(previous, len, holders);
    }
  }

  /// Adds `blocks` output blocks to booking `slot`.
  pub(crate) fn grow_output(&mut self, slot: u32, blocks: u64, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    s.output_blocks += blocks;
    self.output_blocks += blocks;
    self.weighted_own_milli += s.weight * blocks;
  }

  /// Drops all output blocks of booking `slot` (when it is freed).
  pub(crate) fn drop_output(&mut self, slot: u32, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    self.output_blocks -= s.output_blocks;
    self.weighted_own_milli -= s.weight * s.output_blocks;
    s.output_blocks = 0;
  }

  /// Changes booking `slot`'s weight; its own blocks are re-weighed.
  pub(crate) fn reweigh(&mut self, slot: u32, weight: u64, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    let own = s.exclusive + s.output_blocks;
    self.weighted_own_milli = self.weighted_own_milli - s.weight * own + weight * own;
    s.weight = weight;
  }

  fn gain_exclusive(&mut self, slot: u32, blocks: u64, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    s.exclusive += blocks;
    self.exclusive_blocks += blocks;
    self.weighted_own_milli += s.weight * blocks;
  }

  fn lose_exclusive(&mut self, slot: u32, blocks: u64, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    s.exclusive -= blocks;
    self.exclusive_blocks -= blocks;
    self.weighted_own_milli -= s.weight * blocks;
  }

  /// True when nothing is booked: every counter back at zero.
  pub fn is_empty(&self) -> bool {
    self.requests == 0
      && self.prefilling == 0
      && self.chains.is_empty()
      && self.prefill_tokens == 0
      && self.queue.is_empty()
      && self.output_blocks == 0
      && self.exclusive_blocks == 0
      && self.weighted_own_milli == 0
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn holders(n: usize) -> Vec<HolderState> {
    vec![HolderState { weight: FULL_WEIGHT, ..Default::default() }; n]
  }

  #[test]
  fn shared_blocks_count_once_and_move_exclusivity() {
    let mut r = RankLoad::default();
    let mut h = holders(3);
    let a = r.hold(&[1, 2, 3], 0, &mut h, None);
    let b = r.hold(&[1, 2], 1, &mut h, None);
    assert_eq!(r.active_blocks(), 3);
    assert_eq!((h[0].exclusive, h[1].exclusive), (1, 0));
    r.release(a, 0, &mut h);
    // Booking 1 is now the only holder of blocks 1 and 2.
    assert_eq!((h[0].exclusive, h[1].exclusive), (0, 2));
    assert_eq!(r.decode_blocks_milli(), 2 * FULL_WEIGHT);
    r.release(b, 1, &mut h);
    assert!(r.is_empty());
  }

  #[test]
  fn identical_and_diverging_chains() {
    let mut r = RankLoad::default();
    let mut h = holders(3);
    let a = r.hold(&[1, 2, 3, 4], 0, &mut h, None);
    let b = r.hold(&[1, 2, 3, 4], 1, &mut h, None);
    let c = r.hold(&[1, 2, 9], 2, &mut h, None);
    assert_eq!(r.active_blocks(), 5);
    assert_eq!((h[0].exclusive, h[1].exclusive, h[2].exclusive), (0, 0, 1));
    assert_eq!(r.active_prefix(&[1, 2, 3, 4, 5]), 4);
    assert_eq!(r.active_prefix(&[1, 2, 9, 4]), 3);
    assert_eq!(r.active_prefix(&[1, 7]), 1);
    r.release(b, 1, &mut h);
    assert_eq!((h[0].exclusive, h[2].exclusive), (2, 1));
    r.release(a, 0, &mut h);
    assert_eq!(h[2].exclusive, 3);
    assert_eq!(r.active_blocks(), 3);
    r.release(c, 2, &mut h);
    assert!(r.is_empty());
    assert_eq!(r.hold(&[], 0, &mut h, None), None);
  }

  #[test]
  fn decay_weighs_only_unshared_blocks() {
    let mut r = RankLoad::default();
    let mut h = holders(2);
    let a = r.hold(&[1, 2, 3, 4], 0, &mut h, None);
    let b = r.hold(&[1], 1, &mut h, None);
    r.grow_output(0, 2, &mut h);
    r.reweigh(0, 250, &mut h);
    // Block 1 shared (full), blocks 2..4 and two output blocks at a quarter each.
    assert_eq!(r.decode_blocks_milli(), 1000 + 5 * 250);
    assert_eq!(r.active_blocks(), 6);
    r.release(b, 1, &mut h);
    assert_eq!(r.decode_blocks_milli(), 6 * 250);
    r.drop_output(0, &mut h);
    r.release(a, 0, &mut h);
    assert!(r.is_empty());
  }
}
