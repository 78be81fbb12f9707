//! Cost terms of placing a request on one rank. Lower is better.

use crate::load::RankLoad;
use crate::tiers::{TierExtension, LOWER_TIERS};

/// The request's side of the cost, with its per-request overrides applied.
#[derive(Clone, Copy, Debug)]
pub struct CostParams {
  pub block_size: f64,
  pub prompt_tokens: u64,
  pub overlap_score_credit: f64,
  pub prefill_load_scale: f64,
  /// Credit per block reloadable from each lower tier.
  pub tier_credit: [f64; LOWER_TIERS],
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvTerms {
  /// (booked prefill tokens + this prompt's tokens) / block size.
  pub prefill_blocks: f64,
  /// Decode blocks booked (with decay) + this request's blocks not yet active on the rank.
  pub decode_blocks: f64,
  /// prefill_load_scale * max(prefill_blocks - credit, 0) + decode_blocks, where credit =
  /// overlap_score_credit * device overlap + each lower tier's credit * its blocks.
  pub cost: f64,
  /// Leading blocks of the prompt already active on the rank (booked requests hold them).
  pub active_prefix: u32,
}

/// Dynamo's default cost: prefill work left after the cached prefix (device blocks in full,
/// blocks on lower tiers at their tier's credit, each block once), plus decode occupancy.
/// `active_prefix`: the leading blocks of the prompt's `blocks` already active on the rank
/// (`LoadBook::active_prefixes`).
pub fn kv_terms(rank: &RankLoad, blocks: usize, active_prefix: u32, overlap_blocks: u32, lower: &TierExtension, p: &CostParams) -> KvTerms {
  let prefill_blocks = (rank.prefill_tokens() + p.prompt_tokens) as f64 / p.block_size;
  let new_blocks = (blocks - active_prefix as usize) as f64;
  let decode_blocks = rank.decode_blocks() + new_blocks;
  let lower_credit: f64 = lower.blocks.iter().zip(&p.tier_credit).map(|(&b, &c)| b as f64 * c).sum();
  let credit = p.overlap_score_credit * overlap_blocks as f64 + lower_credit;
  let cost = p.prefill_load_scale * (prefill_blocks - credit).max(0.0) + decode_blocks;
  KvTerms { prefill_blocks, decode_blocks, cost, active_prefix }
}

/// Booked load alone, in blocks (least_loaded): ignores caches and the request itself.
pub fn booked_load(rank: &RankLoad, block_size: f64) -> f64 {
  rank.prefill_tokens() as f64 / block_size + rank.decode_blocks()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::load::{BookRequest, LoadBook, WorkerKey};

  /// kv_terms with the rank's active prefix read from its own trie.
  fn terms(rank: &RankLoad, seq: &[u64], overlap: u32, lower: &TierExtension, p: &CostParams) -> KvTerms {
    kv_terms(rank, seq.len(), rank.active_prefix(seq) as u32, overlap, lower, p)
  }

  fn params(prompt_tokens: u64) -> CostParams {
    CostParams { block_size: 4.0, prompt_tokens, overlap_score_credit: 1.0, prefill_load_scale: 1.0, tier_credit: [0.75, 0.25, 0.25] }
  }

  #[test]
  fn idle_rank_cost_is_uncached_prefill_plus_new_blocks() {
    let rank = RankLoad::default();
    // 10 tokens = 2.5 blocks; 2 complete blocks, 1 cached.
    let none = TierExtension::default();
    let t = terms(&rank, &[1, 2], 1, &none, &params(10));
    assert_eq!(t, KvTerms { prefill_blocks: 2.5, decode_blocks: 2.0, cost: 1.5 + 2.0, active_prefix: 0 });
    // The credit never makes the prefill term negative.
    assert_eq!(terms(&rank, &[1, 2], 9, &none, &params(10)).cost, 2.0);
    let scaled = CostParams { prefill_load_scale: 2.0, overlap_score_credit: 0.5, ..params(10) };
    assert_eq!(terms(&rank, &[1, 2], 1, &none, &scaled).cost, 2.0 * 2.0 + 2.0);
  }

  #[test]
  fn lower_tier_blocks_earn_their_tiers_credit() {
    let rank = RankLoad::default();
    // 40 tokens = 10 blocks: 2 on the device, then 4 on host, 2 on disk, 1 external.
    let seq: Vec<u64> = (1..=10).collect();
    let lower = TierExtension { blocks: [4, 2, 1] };
    let t = terms(&rank, &seq, 2, &lower, &params(40));
    let credit = 2.0 + 0.75 * 4.0 + 0.25 * 2.0 + 0.25;
    assert_eq!(t.cost, (10.0 - credit) + 10.0);
    let no_tiers = CostParams { tier_credit: [0.0; LOWER_TIERS], ..params(40) };
    assert_eq!(terms(&rank, &seq, 2, &lower, &no_tiers).cost, terms(&rank, &seq, 2, &TierExtension::default(), &params(40)).cost);
  }

  #[test]
  fn booked_load_and_active_blocks_enter_the_cost() {
    let mut book = LoadBook::new(4);
    let r = book.list_rank(WorkerKey { worker: 1, dp_rank: 0 });
    let req = BookRequest {
      request_id: "a",
      rank: r,
      block_hashes: &[1, 2, 3],
      prompt_tokens: 12,
      overlap_blocks: 0,
      expected_output_tokens: None,
      priority: 0,
      now_ms: 0.0,
    };
    book.book(&req).unwrap();
    let rank = book.rank(r);
    // Booked: 12 prefill tokens (3 blocks), 3 decode blocks. Request: 8 tokens, blocks [1, 9].
    let t = terms(rank, &[1, 9], 0, &TierExtension::default(), &params(8));
    assert_eq!(t.prefill_blocks, 5.0);
    assert_eq!(t.decode_blocks, 3.0 + 1.0, "block 1 is already active here");
    assert_eq!(t.cost, 9.0);
    assert_eq!(t.active_prefix, 1);
    assert_eq!(booked_load(rank, 4.0), 6.0);
  }
}
