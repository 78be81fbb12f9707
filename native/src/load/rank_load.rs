//! Load booked on one (worker, dp_rank): outstanding prefill tokens and decode blocks.
//!
//! Decode blocks are the sequence hashes of the active requests' complete prompt blocks, counted
//! once per rank however many requests share them, plus each request's own output blocks.
//! A request's weight (in thousandths, see `FULL_WEIGHT`) decays toward 0 as its output nears the
//! expected length; it applies to the blocks only that request holds (its output blocks and the
//! prompt blocks nobody else shares), because shared blocks outlive it. All sums are integers, so
//! the load returns to exactly zero when every request is gone.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

/// Weight of a block that counts in full, in thousandths of a block.
pub const FULL_WEIGHT: u64 = 1000;

/// Who holds one block: the number of holders and the XOR of their slots. When a single holder
/// remains, the XOR *is* its slot, which finds it in O(1) without a holder list.
#[derive(Clone, Copy, Debug)]
struct Holders {
  count: u32,
  xor_slots: u32,
}

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

#[derive(Debug, Default)]
pub struct RankLoad {
  blocks: FxHashMap<u64, Holders>,
  prefill_tokens: u64,
  output_blocks: u64,
  /// Number of entries of `blocks` with a single holder.
  exclusive_blocks: u64,
  /// Sum over bookings of weight x (exclusive + output blocks).
  weighted_own_milli: u64,
  requests: u32,
}

impl RankLoad {
  pub fn prefill_tokens(&self) -> u64 {
    self.prefill_tokens
  }

  pub fn requests(&self) -> u32 {
    self.requests
  }

  /// Distinct blocks held (prompt blocks counted once, plus output blocks), without decay.
  pub fn active_blocks(&self) -> u64 {
    self.blocks.len() as u64 + self.output_blocks
  }

  /// Decode blocks with decay, in thousandths of a block (exact integer).
  pub fn decode_blocks_milli(&self) -> u64 {
    (self.blocks.len() as u64 - self.exclusive_blocks) * FULL_WEIGHT + self.weighted_own_milli
  }

  /// Decode blocks with decay: the figure the cost and the busy threshold use.
  pub fn decode_blocks(&self) -> f64 {
    self.decode_blocks_milli() as f64 / FULL_WEIGHT as f64
  }

  pub fn is_idle(&self) -> bool {
    self.requests == 0
  }

  pub fn holds(&self, seq_hash: u64) -> bool {
    self.blocks.contains_key(&seq_hash)
  }

  /// How many leading blocks of `seq_hashes` are already active here. Every booking holds a whole
  /// chain from block 0, and a chained hash fixes its whole prefix, so presence is monotone along
  /// the sequence and a binary search suffices (a few lookups instead of one per block).
  pub fn active_prefix(&self, seq_hashes: &[u64]) -> usize {
    let n = seq_hashes.len();
    if n == 0 || self.blocks.is_empty() || !self.holds(seq_hashes[0]) {
      return 0;
    }
    if self.holds(seq_hashes[n - 1]) {
      return n;
    }
    // Invariant: seq_hashes[lo - 1] is held, seq_hashes[hi] is not.
    let (mut lo, mut hi) = (1usize, n - 1);
    while lo < hi {
      let mid = lo + (hi - lo) / 2;
      if self.holds(seq_hashes[mid]) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    lo
  }

  pub(crate) fn add_request(&mut self, prefill_tokens: u64) {
    self.requests += 1;
    self.prefill_tokens += prefill_tokens;
  }

  pub(crate) fn remove_request(&mut self) {
    self.requests -= 1;
  }

  pub(crate) fn drop_prefill(&mut self, tokens: u64) {
    self.prefill_tokens -= tokens;
  }

  /// Booking `slot` starts holding `seq_hash`.
  pub(crate) fn hold(&mut self, seq_hash: u64, slot: u32, holders: &mut [HolderState]) {
    match self.blocks.entry(seq_hash) {
      Entry::Vacant(v) => {
        v.insert(Holders { count: 1, xor_slots: slot });
        self.gain_exclusive(slot, holders);
      }
      Entry::Occupied(mut o) => {
        let h = o.get_mut();
        h.count += 1;
        h.xor_slots ^= slot;
        if h.count == 2 {
          // The previous sole holder is the XOR with the newcomer removed.
          let previous = h.xor_slots ^ slot;
          self.lose_exclusive(previous, holders);
        }
      }
    }
  }

  /// Booking `slot` stops holding `seq_hash` (which it holds).
  pub(crate) fn release(&mut self, seq_hash: u64, slot: u32, holders: &mut [HolderState]) {
    let Entry::Occupied(mut o) = self.blocks.entry(seq_hash) else { panic!("released block is not held") };
    let h = o.get_mut();
    h.count -= 1;
    h.xor_slots ^= slot;
    match h.count {
      0 => {
        debug_assert_eq!(h.xor_slots, 0);
        o.remove();
        self.lose_exclusive(slot, holders);
      }
      1 => {
        let remaining = h.xor_slots;
        self.gain_exclusive(remaining, holders);
      }
      _ => {}
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

  fn gain_exclusive(&mut self, slot: u32, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    s.exclusive += 1;
    self.exclusive_blocks += 1;
    self.weighted_own_milli += s.weight;
  }

  fn lose_exclusive(&mut self, slot: u32, holders: &mut [HolderState]) {
    let s = &mut holders[slot as usize];
    s.exclusive -= 1;
    self.exclusive_blocks -= 1;
    self.weighted_own_milli -= s.weight;
  }

  /// True when nothing is booked: every counter back at zero.
  pub fn is_empty(&self) -> bool {
    self.requests == 0
      && self.blocks.is_empty()
      && self.prefill_tokens == 0
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
    for b in [1, 2, 3] {
      r.hold(b, 0, &mut h);
    }
    for b in [1, 2] {
      r.hold(b, 1, &mut h);
    }
    assert_eq!(r.active_blocks(), 3);
    assert_eq!((h[0].exclusive, h[1].exclusive), (1, 0));
    r.release(3, 0, &mut h);
    r.release(2, 0, &mut h);
    r.release(1, 0, &mut h);
    // Booking 1 is now the only holder of blocks 1 and 2.
    assert_eq!((h[0].exclusive, h[1].exclusive), (0, 2));
    assert_eq!(r.decode_blocks_milli(), 2 * FULL_WEIGHT);
    r.release(1, 1, &mut h);
    r.release(2, 1, &mut h);
    assert!(r.is_empty());
  }

  #[test]
  fn decay_weighs_only_unshared_blocks() {
    let mut r = RankLoad::default();
    let mut h = holders(2);
    for b in [1, 2, 3, 4] {
      r.hold(b, 0, &mut h);
    }
    r.hold(1, 1, &mut h);
    r.grow_output(0, 2, &mut h);
    r.reweigh(0, 250, &mut h);
    // Block 1 shared (full), blocks 2..4 and two output blocks at a quarter each.
    assert_eq!(r.decode_blocks_milli(), 1000 + 5 * 250);
    assert_eq!(r.active_blocks(), 6);
    r.release(1, 1, &mut h);
    assert_eq!(r.decode_blocks_milli(), 6 * 250);
    r.drop_output(0, &mut h);
    for b in [1, 2, 3, 4] {
      r.release(b, 0, &mut h);
    }
    assert!(r.is_empty());
  }

  #[test]
  fn active_prefix_is_found_by_bisection() {
    let mut r = RankLoad::default();
    let mut h = holders(1);
    for b in [10, 11, 12] {
      r.hold(b, 0, &mut h);
    }
    assert_eq!(r.active_prefix(&[10, 11, 12, 13, 14]), 3);
    assert_eq!(r.active_prefix(&[10, 11]), 2);
    assert_eq!(r.active_prefix(&[10, 99, 98]), 1);
    assert_eq!(r.active_prefix(&[99, 10]), 0);
    assert_eq!(r.active_prefix(&[]), 0);
    for n in 0..=6 {
      let seq: Vec<u64> = (0..n).map(|i| 10 + i).collect();
      let expected = seq.iter().take_while(|&&b| r.holds(b)).count();
      assert_eq!(r.active_prefix(&seq), expected, "n = {n}");
    }
  }
}
