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
    priority: 0,
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
  let again =
    BookRequest { request_id: "a", rank: r, block_hashes: &[9], prompt_tokens: 40, overlap_blocks: 0, expected_output_tokens: None, priority: 0, now_ms: 0.0 };
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
  let mut walk = PrefixWalk::default();
  b.active_prefixes(&[1, 2, 4, 6], &mut walk);
  assert_eq!((walk.prefix(r1), walk.prefix(r2)), (3, 2));
  b.free("a", 0.0);
  assert_eq!(b.rank(r1).active_blocks(), 4);
  b.free("b", 0.0);
  b.active_prefixes(&[1, 2, 4, 6], &mut walk);
  assert_eq!((walk.prefix(r1), walk.prefix(r2)), (0, 2), "a freed chain is no longer active");
}

#[test]
fn a_walk_recorded_before_the_book_changed_is_not_followed() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1, 2, 3, 4], 16, 0, None);
  let mut walk = PrefixWalk::default();
  b.active_prefixes(&[1, 2, 3, 9], &mut walk);
  assert_eq!(walk.prefix(r), 3);
  // The book changes after the walk: "b" splits the chain where the walk saw it whole.
  book(&mut b, "b", r, &[1, 7], 8, 0, None);
  let req = |id, hashes| BookRequest {
    request_id: id,
    rank: r,
    block_hashes: hashes,
    prompt_tokens: 16,
    overlap_blocks: 0,
    expected_output_tokens: None,
    priority: 0,
    now_ms: 0.0,
  };
  b.book_along(&req("c", &[1, 2, 3, 9]), Some(&walk)).unwrap();
  // A walk of another prompt is not followed either.
  b.active_prefixes(&[1, 2], &mut walk);
  b.book_along(&req("d", &[1, 2, 3, 4, 5]), Some(&walk)).unwrap();
  b.active_prefixes(&[1, 2, 3, 9, 9], &mut walk);
  assert_eq!(walk.prefix(r), 4);
  b.active_prefixes(&[1, 2, 3, 4, 5, 6], &mut walk);
  assert_eq!(walk.prefix(r), 5);
  for id in ["a", "b", "c", "d"] {
    assert!(b.free(id, 0.0));
  }
  assert!(b.is_empty());
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
  priority: i32,
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

/// Every rank's blocks, decayed decode blocks and prefill tokens equal the reference's.
fn check_ranks(b: &LoadBook, model: &HashMap<String, RefBooking>, ranks: &[RankId], bs: u64, step: u32) {
  for &rank in ranks {
    let (blocks, milli) = reference_decode_milli(model, rank, bs);
    assert_eq!(b.rank(rank).active_blocks(), blocks, "step {step}");
    assert_eq!(b.rank(rank).decode_blocks_milli(), milli, "step {step}");
    let prefill: u64 = model.values().filter(|r| r.rank == rank && r.prefill != u64::MAX).map(|r| r.prefill).sum();
    assert_eq!(b.rank(rank).prefill_tokens(), prefill, "step {step}");
    for class in -1..=2 {
      let from: u64 = model.values().filter(|r| r.rank == rank && r.prefill != u64::MAX && r.priority >= class).map(|r| r.prefill).sum();
      assert_eq!(b.rank(rank).prefill_tokens_from(class), from, "step {step}, class {class}");
    }
  }
  check_active_prefixes(b, model, ranks, step);
}

/// Every rank's active prefix of some prompts (active bookings' chains, cut short or run on past
/// their end), from the book's shared trie, equals the reference's (the longest common prefix
/// with one of the rank's bookings) and the rank's own trie's.
fn check_active_prefixes(b: &LoadBook, model: &HashMap<String, RefBooking>, ranks: &[RankId], step: u32) {
  let common = |a: &[u64], q: &[u64]| a.iter().zip(q).take_while(|(x, y)| x == y).count();
  let mut probes: Vec<Vec<u64>> = vec![vec![], vec![5, 21]];
  for r in model.values().take(12) {
    probes.push(r.hashes.clone());
    probes.push(r.hashes.iter().copied().chain([1 << 40, 7]).collect());
    probes.push(r.hashes[..r.hashes.len() / 2].to_vec());
  }
  let mut walk = PrefixWalk::default();
  for q in &probes {
    b.active_prefixes(q, &mut walk);
    for &rank in ranks {
      let want = model.values().filter(|r| r.rank == rank).map(|r| common(&r.hashes, q)).max().unwrap_or(0);
      assert_eq!(walk.prefix(rank) as usize, want, "step {step}, rank {rank}, prompt {q:?}");
      assert_eq!(b.rank(rank).active_prefix(q), want, "step {step}, rank {rank}, prompt {q:?}");
    }
  }
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
        let priority = rng.i32(-1..2);
        let req = BookRequest {
          request_id: &id,
          rank,
          block_hashes: &hashes,
          prompt_tokens: prompt,
          overlap_blocks: overlap,
          expected_output_tokens: expected,
          priority,
          now_ms: now,
        };
        // Half the bookings follow the walk of the prompt's active prefixes, as the router's do.
        let res = if rng.bool() {
          b.book(&req)
        } else {
          let mut walk = PrefixWalk::default();
          b.active_prefixes(&hashes, &mut walk);
          b.book_along(&req, Some(&walk))
        };
        assert_eq!(res.is_err(), model.contains_key(&id));
        if res.is_ok() {
          let prefill = prompt.saturating_sub(overlap as u64 * bs);
          model.insert(id, RefBooking { rank, hashes, prompt, prefill, output: 0, expected, priority, touched: now });
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
      check_ranks(&b, &model, &ranks, bs, step);
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

fn remote(b: &mut LoadBook, origin: &str, id: &str, rank: RankId, hashes: &[u64], prompt: u64) -> Result<(), BookError> {
  b.book_remote(
    origin,
    &BookRequest {
      request_id: id,
      rank,
      block_hashes: hashes,
      prompt_tokens: prompt,
      overlap_blocks: 0,
      expected_output_tokens: None,
      priority: 0,
      now_ms: 0.0,
    },
  )
}

#[test]
fn remote_bookings_load_the_same_ranks_under_their_origin() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "x", r, &[1, 2], 8, 0, None);
  // The same request id from two other replicas and from this one: three bookings.
  remote(&mut b, "A", "x", r, &[1, 2, 3], 12).unwrap();
  remote(&mut b, "B", "x", r, &[9], 4).unwrap();
  assert_eq!(remote(&mut b, "A", "x", r, &[5], 4), Err(BookError::DuplicateRequest));
  assert_eq!(b.rank(r).requests(), 3);
  assert_eq!(b.rank(r).active_blocks(), 4, "blocks 1, 2 shared by this replica's booking and A's");
  assert_eq!(b.rank(r).prefill_tokens(), 8 + 12 + 4);
  assert_eq!((b.active_requests(), b.remote_requests()), (1, 2));
  assert_eq!(b.remote_origins(), vec![("A", 1), ("B", 1)]);

  assert!(b.mark_remote_prefill_completed("A", "x", 1.0));
  assert!(!b.mark_remote_prefill_completed("A", "x", 1.0), "the first time only");
  assert!(!b.mark_remote_prefill_completed("C", "x", 1.0), "unknown origin");
  assert_eq!(b.rank(r).prefill_tokens(), 8 + 4);
  assert!(b.free_remote("A", "x", 2.0));
  assert!(!b.free_remote("A", "x", 2.0), "freed once");
  assert!(b.contains("x"), "this replica's own booking is untouched");
  assert_eq!(b.rank(r).active_blocks(), 3);
  assert!(b.free("x", 3.0));
  assert_eq!(b.drop_origin("B", 4.0), 1);
  assert_eq!(b.drop_origin("B", 4.0), 0);
  assert!(b.is_empty());
  assert_eq!(b.remote_stats(), RemoteStats { booked: 2, freed: 1, expired: 0, dropped: 1 });
  assert_eq!(b.stats(), BookStats { booked: 1, freed: 1, expired: 0 });
}

#[test]
fn dropping_an_origin_releases_its_bookings_on_removed_workers_too() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  // A worker this replica never listed: its rank exists while a remote booking loads it.
  let unknown = b.rank_for(key(7));
  remote(&mut b, "A", "1", r, &[1], 4).unwrap();
  remote(&mut b, "A", "2", unknown, &[1, 2], 8).unwrap();
  remote(&mut b, "B", "1", r, &[1], 4).unwrap();
  assert_eq!(b.snapshot().len(), 2);
  assert_eq!(b.drop_origin("A", 0.0), 2);
  assert_eq!(b.snapshot().len(), 1, "the unlisted rank was recycled once idle");
  assert_eq!(b.remote_origins(), vec![("B", 1)]);
  assert_eq!(b.rank(r).requests(), 1);
}

#[test]
fn remote_bookings_expire_like_local_ones_and_are_counted_apart() {
  let mut b = LoadBook::new(4);
  let r = b.list_rank(key(1));
  book(&mut b, "a", r, &[1], 4, 0, None);
  remote(&mut b, "A", "a", r, &[1], 4).unwrap();
  b.mark_remote_prefill_completed("A", "a", 500.0);
  assert_eq!(b.expire_stale(1000.0, 1000.0), 1, "the local booking, untouched since 0");
  assert_eq!(b.expire_stale(1500.0, 1000.0), 1, "the remote one, touched at 500");
  assert_eq!(b.stats().expired, 1);
  assert_eq!(b.remote_stats().expired, 1);
  assert!(b.is_empty());
}

#[test]
fn random_local_and_remote_operations_match_the_reference_and_end_at_zero() {
  let mut rng = fastrand::Rng::with_seed(11);
  let bs = 4u64;
  let mut b = LoadBook::new(bs as u32);
  let ranks: Vec<RankId> = (0..3).map(|w| b.list_rank(key(w))).collect();
  let origins = ["", "A", "B"]; // "" is this router
                                // Keyed by "origin/request".
  let mut model: HashMap<String, RefBooking> = HashMap::new();
  let mut now = 0.0;
  for step in 0..20_000u32 {
    now += rng.f64() * 10.0;
    let origin = origins[rng.usize(0..origins.len())];
    let id = format!("r{}", rng.u32(0..100));
    let k = format!("{origin}/{id}");
    match rng.u32(0..12) {
      0..=4 => {
        let n = rng.u64(0..6);
        let mut code = rng.u64(1..4);
        let hashes: Vec<u64> = (0..n)
          .map(|_| {
            code = code * 4 + rng.u64(0..2);
            code
          })
          .collect();
        let prompt = n * bs + rng.u64(0..bs);
        let rank = ranks[rng.usize(0..ranks.len())];
        let req = BookRequest {
          request_id: &id,
          rank,
          block_hashes: &hashes,
          prompt_tokens: prompt,
          overlap_blocks: 0,
          expected_output_tokens: None,
          priority: 0,
          now_ms: now,
        };
        let res = if origin.is_empty() { b.book(&req) } else { b.book_remote(origin, &req) };
        assert_eq!(res.is_err(), model.contains_key(&k), "step {step}");
        if res.is_ok() {
          model.insert(k, RefBooking { rank, hashes, prompt, prefill: prompt, output: 0, expected: None, priority: 0, touched: now });
        }
      }
      5..=6 => {
        let known = model.get_mut(&k);
        let expect = known.as_ref().is_some_and(|r| r.prefill != u64::MAX);
        let got = if origin.is_empty() { b.mark_prefill_completed(&id, now) } else { b.mark_remote_prefill_completed(origin, &id, now) };
        assert_eq!(got, expect, "step {step}");
        if let Some(r) = known {
          r.prefill = u64::MAX;
          r.touched = now;
        }
      }
      7..=9 => {
        let got = if origin.is_empty() { b.free(&id, now) } else { b.free_remote(origin, &id, now) };
        assert_eq!(got, model.remove(&k).is_some(), "step {step}");
      }
      10 if !origin.is_empty() && rng.u32(0..8) == 0 => {
        let before = model.len();
        model.retain(|key, _| !key.starts_with(&format!("{origin}/")));
        assert_eq!(b.drop_origin(origin, now), before - model.len(), "step {step}");
      }
      _ => {
        let before = model.len();
        model.retain(|_, r| now - r.touched < 300.0);
        assert_eq!(b.expire_stale(now, 300.0), before - model.len(), "step {step}");
      }
    }
    if step % 89 == 0 {
      check_ranks(&b, &model, &ranks, bs, step);
      let remote = model.keys().filter(|k| !k.starts_with('/')).count();
      assert_eq!((b.active_requests(), b.remote_requests()), (model.len() - remote, remote), "step {step}");
    }
  }
  for origin in ["A", "B"] {
    b.drop_origin(origin, now);
  }
  let ids: Vec<String> = model.keys().filter_map(|k| k.strip_prefix('/').map(str::to_owned)).collect();
  for id in ids {
    assert!(b.free(&id, now));
  }
  assert!(b.is_empty());
  let (s, r) = (b.stats(), b.remote_stats());
  assert_eq!(s.booked, s.freed + s.expired);
  assert_eq!(r.booked, r.freed + r.expired + r.dropped);
}
