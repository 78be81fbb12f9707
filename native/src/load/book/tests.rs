use std::collections::HashMap;

use super::*;

fn key(worker: u64) -> WorkerKey {
  WorkerKey { worker, dp_rank: 0 }
}

fn book(b: &mut LoadBook, id: &str, rank: RankId, hashes: &[u64], prompt: u64, overlap: u32, expected: Option<u64>) {
  b.book(&BookRequest {
    request_id: id,
    rank,
    block_hashes: hashes,
    prompt_tokens: prompt,
    overlap_blocks: overlap,
    expected_output_tokens: expected,
    now_ms: 0.0,
  })
  .unwrap();
}

#[test]
fn prefill_tokens_are_prompt_minus_cached_and_never_negative() {
  let mut b = LoadBook::new(16);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1, 2, 3], 50, 2, None);
  assert_eq!(b.rank(r).prefill_tokens(), 50 - 32);
  book(&mut b, "b", r, &[1, 2, 3], 50, 9, None);
  assert_eq!(b.rank(r).prefill_tokens(), 18);
  assert_eq!(b.total_prefill_tokens(), 18);
  assert!(b.mark_prefill_completed("a", 1.0));
  assert!(!b.mark_prefill_completed("a", 2.0), "only the first call counts");
  assert!(!b.mark_prefill_completed("zzz", 2.0));
  assert_eq!(b.total_prefill_tokens(), 0);
  assert!(b.free("a", 3.0) && b.free("b", 3.0));
  assert!(!b.free("a", 4.0), "free is idempotent");
  assert!(b.is_empty());
}

#[test]
fn duplicate_request_ids_are_refused_without_side_effects() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1], 4, 0, None);
  let again = BookRequest { request_id: "a", rank: r, block_hashes: &[9], prompt_tokens: 40, overlap_blocks: 0, expected_output_tokens: None, now_ms: 0.0 };
  assert_eq!(b.book(&again), Err(BookError::DuplicateRequest));
  assert_eq!(b.rank(r).active_blocks(), 1);
  assert_eq!(b.rank(r).prefill_tokens(), 4);
  assert_eq!(b.stats().booked, 1);
}

#[test]
fn shared_prefixes_count_once_per_rank() {
  let mut b = LoadBook::new(4);
  let r1 = b.list_rank(key(1));
  let r2 = b.list_rank(key(2));
  book(&mut b, "a", r1, &[1, 2, 3], 12, 0, None);
  book(&mut b, "b", r1, &[1, 2, 4, 5], 16, 0, None);
  book(&mut b, "c", r2, &[1, 2], 8, 0, None);
  assert_eq!(b.rank(r1).active_blocks(), 5);
  assert_eq!(b.rank(r2).active_blocks(), 2);
  assert_eq!(b.rank(r1).active_prefix(&[1, 2, 4, 6]), 3);
  b.free("a", 0.0);
  assert_eq!(b.rank(r1).active_blocks(), 4);
}

#[test]
fn output_growth_books_blocks_and_decays_toward_the_expected_length() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  // 6 prompt tokens: 1 complete block; the partial block fills with the 2nd output token.
  book(&mut b, "a", r, &[7], 6, 0, Some(8));
  assert!(b.add_output_tokens("a", 1, 1.0));
  assert_eq!(b.rank(r).active_blocks(), 1);
  assert_eq!(b.rank(r).prefill_tokens(), 0, "output implies prefill completed");
  assert!(!b.mark_prefill_completed("a", 1.0));
  assert!(b.add_output_tokens("a", 1, 2.0));
  assert_eq!(b.rank(r).active_blocks(), 2);
  // 2 of 8 expected tokens: own blocks weigh 6/8.
  assert_eq!(b.rank(r).decode_blocks_milli(), 2 * 750);
  assert!(b.add_output_tokens("a", 6, 3.0));
  // 8 of 8: 14 tokens = 3 blocks, all at weight 0.
  assert_eq!(b.rank(r).active_blocks(), 3);
  assert_eq!(b.rank(r).decode_blocks_milli(), 0);
  // Past the expected length the weight stays at 0 and growth continues.
  assert!(b.add_output_tokens("a", 100, 4.0));
  assert_eq!(b.rank(r).active_blocks(), 1 + 110 / 4 - 1 + 1);
  assert!(!b.add_output_tokens("nope", 1, 4.0));
  assert!(b.free("a", 5.0));
  assert!(b.is_empty());
}

#[test]
fn without_expected_length_output_counts_in_full() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1], 4, 0, None);
  b.add_output_tokens("a", 8, 0.0);
  assert_eq!(b.rank(r).decode_blocks_milli(), 3 * FULL_WEIGHT);
}

#[test]
fn stale_bookings_expire_counted_and_touching_keeps_them() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  for id in ["a", "b", "c"] {
    book(&mut b, id, r, &[1, 2], 8, 0, None);
  }
  b.add_output_tokens("b", 1, 500.0);
  assert_eq!(b.expire_stale(999.0, 1000.0), 0);
  assert_eq!(b.expire_stale(1000.0, 1000.0), 2);
  assert!(b.contains("b") && !b.contains("a"));
  assert!(!b.free("a", 1000.0), "an expired booking is gone");
  assert_eq!(b.stats(), BookStats { booked: 3, freed: 0, expired: 2 });
  assert_eq!(b.expire_stale(1500.0, 1000.0), 1);
  assert!(b.is_empty());
}

#[test]
fn unlisted_ranks_keep_their_load_until_freed() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1], 8, 0, None);
  b.unlist_rank(key(1));
  assert_eq!(b.snapshot().len(), 1, "still loaded");
  assert!(b.free("a", 0.0));
  assert!(b.snapshot().is_empty(), "recycled once idle");
  let again = b.list_rank(key(2));
  assert_eq!(again, r, "rank ids are reused");
  assert_eq!(b.rank_key(again), key(2));
}

#[test]
fn drained_prefill_gives_the_retry_hint() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[], 2000, 0, None);
  b.mark_prefill_completed("a", 2000.0);
  // 2000 tokens drained in the second from t = 2000 to 3000: 2 per ms.
  assert_eq!(b.retry_after_ms(100, 3000.0), 50.0);
}

/// Reference model: recomputes every rank's load from the list of active bookings.
#[derive(Clone)]
struct RefBooking {
  rank: RankId,
  hashes: Vec<u64>,
  prompt: u64,
  prefill: u64,
  output: u64,
  expected: Option<u64>,
  touched: f64,
}

fn reference_decode_milli(active: &HashMap<String, RefBooking>, rank: RankId, bs: u64) -> (u64, u64) {
  let mut holders: HashMap<u64, Vec<&RefBooking>> = HashMap::new();
  let mut milli = 0u64;
  let mut blocks = 0u64;
  for r in active.values().filter(|r| r.rank == rank) {
    for h in &r.hashes {
      holders.entry(*h).or_default().push(r);
    }
  }
  let weight = |r: &RefBooking| match r.expected {
    Some(e) => FULL_WEIGHT * (e - r.output.min(e)) / e,
    None => FULL_WEIGHT,
  };
  for hs in holders.values() {
    blocks += 1;
    milli += if hs.len() == 1 { weight(hs[0]) } else { FULL_WEIGHT };
  }
  for r in active.values().filter(|r| r.rank == rank) {
    let out_blocks = (r.prompt + r.output) / bs - r.prompt / bs;
    blocks += out_blocks;
    milli += out_blocks * weight(r);
  }
  (blocks, milli)
}

#[test]
fn random_operations_match_the_reference_and_end_at_zero() {
  let mut rng = fastrand::Rng::with_seed(7);
  let bs = 4u64;
  let mut b = LoadBook::new(bs as u32);
  let ranks: Vec<RankId> = (0..4).map(|w| b.list_rank(key(w))).collect();
  let mut model: HashMap<String, RefBooking> = HashMap::new();
  let mut now = 0.0;
  for step in 0..20_000u32 {
    now += rng.f64() * 10.0;
    let id = format!("r{}", rng.u32(0..300));
    match rng.u32(0..10) {
      0..=3 => {
        // Prompts share prefixes and diverge at random depths: each hash names its whole prefix
        // (as chained hashes do), here as the path of branch digits from one of a few roots.
        let n = rng.u64(0..9);
        let mut code = rng.u64(1..4);
        let hashes: Vec<u64> = (0..n)
          .map(|_| {
            code = code * 4 + if rng.u32(0..3) == 0 { rng.u64(1..4) } else { 0 };
            code
          })
          .collect();
        let prompt = n * bs + rng.u64(0..bs);
        let overlap = rng.u32(0..8);
        let expected = if rng.bool() { Some(rng.u64(1..20)) } else { None };
        let rank = ranks[rng.usize(0..ranks.len())];
        let req = BookRequest { request_id: &id, rank, block_hashes: &hashes, prompt_tokens: prompt, overlap_blocks: overlap, expected_output_tokens: expected, now_ms: now };
        let res = b.book(&req);
        assert_eq!(res.is_err(), model.contains_key(&id));
        if res.is_ok() {
          let prefill = prompt.saturating_sub(overlap as u64 * bs);
          model.insert(id, RefBooking { rank, hashes, prompt, prefill, output: 0, expected, touched: now });
        }
      }
      4 => {
        let known = model.get_mut(&id);
        let expect = known.as_ref().is_some_and(|r| r.prefill != u64::MAX);
        assert_eq!(b.mark_prefill_completed(&id, now), expect);
        if let Some(r) = known {
          r.prefill = u64::MAX; // marks "completed"
          r.touched = now;
        }
      }
      5..=6 => {
        let t = rng.u64(0..6);
        assert_eq!(b.add_output_tokens(&id, t, now), model.contains_key(&id));
        if let Some(r) = model.get_mut(&id) {
          r.output += t;
          r.prefill = u64::MAX;
          r.touched = now;
        }
      }
      7..=8 => assert_eq!(b.free(&id, now), model.remove(&id).is_some()),
      _ => {
        let before = model.len();
        model.retain(|_, r| now - r.touched < 200.0);
        assert_eq!(b.expire_stale(now, 200.0), before - model.len());
      }
    }
    if step % 97 == 0 {
      for &rank in &ranks {
        let (blocks, milli) = reference_decode_milli(&model, rank, bs);
        assert_eq!(b.rank(rank).active_blocks(), blocks, "step {step}");
        assert_eq!(b.rank(rank).decode_blocks_milli(), milli, "step {step}");
        let prefill: u64 = model.values().filter(|r| r.rank == rank && r.prefill != u64::MAX).map(|r| r.prefill).sum();
        assert_eq!(b.rank(rank).prefill_tokens(), prefill, "step {step}");
      }
    }
  }
  let ids: Vec<String> = model.keys().cloned().collect();
  for id in ids {
    assert!(b.free(&id, now));
  }
  assert!(b.is_empty());
  assert_eq!(b.total_decode_blocks_milli(), 0);
  let s = b.stats();
  assert_eq!(s.booked, s.freed + s.expired);
}
