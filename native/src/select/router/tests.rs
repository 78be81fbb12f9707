use crate::select::TtftModel;
use std::collections::HashMap;

use super::*;

/// Fake prefix index: each rank holds a list of local hashes; a match counts the leading blocks.
#[derive(Default)]
struct FakeIndex {
  held: HashMap<WorkerKey, Vec<u64>>,
  recorded: Vec<(WorkerKey, usize)>,
  /// Lower-tier blocks each rank could reload after its device prefix, whatever the prompt.
  lower: HashMap<WorkerKey, TierExtension>,
}

impl PrefixIndex for FakeIndex {
  fn find_matches_into(&mut self, local: &[u64], _now: f64, out: &mut Vec<(WorkerKey, u32)>) {
    out.clear();
    for (k, held) in &self.held {
      let n = local.iter().take_while(|h| held.contains(h)).count() as u32;
      if n > 0 {
        out.push((*k, n));
      }
    }
  }
  fn record_routing(&mut self, key: WorkerKey, local: &[u64], _now: f64) {
    self.recorded.push((key, local.len()));
    self.held.entry(key).or_default().extend_from_slice(local);
  }
  fn lower_extensions_into(&mut self, _seq: &[u64], _device: &[(WorkerKey, u32)], out: &mut Vec<(WorkerKey, TierExtension)>) {
    out.clear();
    out.extend(self.lower.iter().map(|(k, e)| (*k, *e)));
  }
}

const BS: u32 = 4;

fn key(worker: u64) -> WorkerKey {
  WorkerKey { worker, dp_rank: 0 }
}

fn core_with(workers: u64, tweak: impl FnOnce(&mut RoutingConfig)) -> RoutingCore {
  let mut cfg = RoutingConfig::new(BS);
  cfg.seed = 42;
  tweak(&mut cfg);
  let mut core = RoutingCore::new(cfg).unwrap();
  let specs: Vec<WorkerSpec> = (0..workers).map(|w| WorkerSpec { worker: w, dp_size: 1, kv_capacity_blocks: Some(100), ttft: None }).collect();
  core.set_workers(&specs).unwrap();
  core
}

fn tokens(first: u32, n: usize) -> Vec<u32> {
  (0..n as u32).map(|i| first + i).collect()
}

/// Makes worker `w` hold the first `blocks` blocks of `toks` in the index.
fn cache(index: &mut FakeIndex, w: u64, toks: &[u32], blocks: usize) {
  let local = crate::hash::block_hashes(toks, BS as usize, crate::hash::HASH_SEED);
  index.held.entry(key(w)).or_default().extend_from_slice(&local[..blocks]);
}

#[test]
fn kv_prefers_the_cached_worker_and_explains_why() {
  let mut core = core_with(3, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 18); // 4 complete blocks + 2 tokens
  cache(&mut index, 2, &t, 3);
  let d = core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Book).unwrap();
  assert_eq!(d.key, key(2));
  assert_eq!((d.overlap_blocks, d.prompt_tokens, d.cached_tokens, d.prefill_tokens), (3, 18, 12, 6));
  assert_eq!(d.policy, Policy::Kv);
  assert!(d.timings.total_us >= d.timings.hash_us);
  let ex = core.explanation();
  assert_eq!(ex.len(), 3);
  assert_eq!(ex[0].key, key(2));
  // 18 tokens = 4.5 blocks, credit 3: prefill term 1.5; decode: 4 new blocks.
  assert_eq!((ex[0].overlap_blocks, ex[0].prefill_blocks, ex[0].decode_blocks, ex[0].cost), (3, 4.5, 4.0, 5.5));
  assert_eq!((ex[1].overlap_blocks, ex[1].cost), (0, 8.5));
  assert!(ex.windows(2).all(|w| w[0].cost <= w[1].cost));
  let load = core.load();
  assert_eq!(load.iter().find(|l| l.key == key(2)).unwrap().prefill_tokens, 6);
}

#[test]
fn booked_load_pushes_later_requests_elsewhere() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let first = core.route(&mut index, &RouteRequest::new("a", &tokens(0, 64)), 0.0, Mode::Book).unwrap();
  let second = core.route(&mut index, &RouteRequest::new("b", &tokens(1000, 64)), 0.0, Mode::Book).unwrap();
  assert_ne!(first.key, second.key);
}

#[test]
fn exact_ties_spread_uniformly_and_reproducibly() {
  let run = |seed: u64| {
    let mut core = core_with(4, |c| c.seed = seed);
    let mut index = FakeIndex::default();
    let t = tokens(0, 32);
    let mut counts = [0u32; 4];
    for i in 0..8_000 {
      let id = format!("r{i}");
      let d = core.route(&mut index, &RouteRequest::new(&id, &t), 0.0, Mode::Book).unwrap();
      counts[d.key.worker as usize] += 1;
      assert!(core.free(&id, 0.0));
    }
    counts
  };
  let counts = run(9);
  for c in counts {
    assert!((1_700..2_300).contains(&c), "{counts:?}");
  }
  assert_eq!(run(9), counts, "same seed, same choices");
  assert_ne!(run(10), counts);
}

#[test]
fn temperature_samples_by_softmax_of_normalised_costs() {
  let mut core = core_with(3, |c| c.temperature = 1.0);
  let mut index = FakeIndex::default();
  let t = tokens(0, 40); // 10 blocks
  cache(&mut index, 0, &t, 10);
  cache(&mut index, 1, &t, 5);
  // Costs: w0 10 (0 + 10), w1 15 (5 + 10), w2 20 (10 + 10): normalised 0, 0.5, 1.
  let w = [1.0f64, (-0.5f64).exp(), (-1.0f64).exp()];
  let sum: f64 = w.iter().sum();
  let n = 30_000;
  let mut counts = [0u32; 3];
  for i in 0..n {
    let id = format!("r{i}");
    let d = core.route(&mut index, &RouteRequest::new(&id, &t), 0.0, Mode::Book).unwrap();
    counts[d.key.worker as usize] += 1;
    core.free(&id, 0.0);
  }
  for i in 0..3 {
    let got = counts[i] as f64 / n as f64;
    assert!((got - w[i] / sum).abs() < 0.02, "{counts:?}");
  }
  // A per-request temperature of 0 is greedy again.
  let mut req = RouteRequest::new("greedy", &t);
  req.temperature = Some(0.0);
  assert_eq!(core.route(&mut index, &req, 0.0, Mode::Query).unwrap().key, key(0));
}

#[test]
fn per_request_overrides_change_the_cost() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 40);
  cache(&mut index, 0, &t, 10);
  // Load worker 0 with decode blocks so that, without credit, worker 1 wins.
  let other = tokens(500, 20);
  let mut pinned = RouteRequest::new("x", &other);
  pinned.pinned_worker = Some(0);
  core.route(&mut index, &pinned, 0.0, Mode::Book).unwrap();
  core.mark_prefill_completed("x", 0.0);
  // Worker 0: 5 decode blocks booked. With credit: w0 0 + 15 < w1 10 + 10; without: 10 + 15 > 20.
  assert_eq!(core.route(&mut index, &RouteRequest::new("q", &t), 0.0, Mode::Query).unwrap().key, key(0));
  let mut no_credit = RouteRequest::new("q", &t);
  no_credit.overlap_score_credit = Some(0.0);
  let d = core.route(&mut index, &no_credit, 0.0, Mode::Query).unwrap();
  assert_eq!(d.key, key(1));
  let mut bad = RouteRequest::new("q", &t);
  bad.prefill_load_scale = Some(f64::NAN);
  assert!(matches!(core.route(&mut index, &bad, 0.0, Mode::Query), Err(RouteError::InvalidArgument(m)) if m.contains("prefillLoadScale")));
}

#[test]
fn round_robin_query_peeks_and_route_advances() {
  let mut core = core_with(3, |c| c.policy = Policy::RoundRobin);
  let mut index = FakeIndex::default();
  let t = tokens(0, 8);
  let peek = |core: &mut RoutingCore, index: &mut FakeIndex| core.route(index, &RouteRequest::new("", &t), 0.0, Mode::Query).unwrap().key.worker;
  assert_eq!(peek(&mut core, &mut index), 0);
  assert_eq!(peek(&mut core, &mut index), 0, "query does not advance");
  let mut seen = Vec::new();
  for i in 0..7 {
    seen.push(core.route(&mut index, &RouteRequest::new(&format!("r{i}"), &t), 0.0, Mode::Book).unwrap().key.worker);
  }
  assert_eq!(seen, vec![0, 1, 2, 0, 1, 2, 0]);
  assert_eq!(peek(&mut core, &mut index), 1);
  // Ineligible workers are skipped without losing the rotation.
  let mut only = RouteRequest::new("r7", &t);
  let allowed = [0u64, 2];
  only.allowed_workers = Some(&allowed);
  assert_eq!(core.route(&mut index, &only, 0.0, Mode::Book).unwrap().key.worker, 2);
  assert_eq!(peek(&mut core, &mut index), 0);
}

#[test]
fn random_and_least_loaded() {
  let mut core = core_with(3, |c| c.policy = Policy::LeastLoaded);
  let mut index = FakeIndex::default();
  let (big, little) = (tokens(0, 400), tokens(0, 40));
  let mut pin = RouteRequest::new("big", &big);
  pin.pinned_worker = Some(1);
  core.route(&mut index, &pin, 0.0, Mode::Book).unwrap();
  let mut small = RouteRequest::new("small", &little);
  small.pinned_worker = Some(0);
  core.route(&mut index, &small, 0.0, Mode::Book).unwrap();
  let d = core.route(&mut index, &RouteRequest::new("c", &tokens(0, 400)), 0.0, Mode::Book).unwrap();
  assert_eq!(d.key, key(2));
  // least_loaded's score is the booked load, before this request.
  assert_eq!(core.explanation()[0].cost, 0.0);

  let mut random = core_with(4, |c| c.policy = Policy::Random);
  let mut counts = [0u32; 4];
  for i in 0..4_000 {
    let id = format!("r{i}");
    counts[random.route(&mut index, &RouteRequest::new(&id, &tokens(0, 8)), 0.0, Mode::Book).unwrap().key.worker as usize] += 1;
  }
  assert!(counts.iter().all(|&c| (850..1_150).contains(&c)), "{counts:?}");
}

#[test]
fn direct_needs_a_pinned_worker_and_honours_the_rank() {
  let mut core = core_with(0, |c| c.policy = Policy::Direct);
  core.set_workers(&[WorkerSpec { worker: 5, dp_size: 4, kv_capacity_blocks: None, ttft: None }]).unwrap();
  let mut index = FakeIndex::default();
  let t = tokens(0, 8);
  let err = core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Book).unwrap_err();
  assert_eq!(err.code(), "missing_routing_hint");
  let mut req = RouteRequest::new("a", &t);
  req.pinned_worker = Some(5);
  req.pinned_dp_rank = Some(3);
  let d = core.route(&mut index, &req, 0.0, Mode::Book).unwrap();
  assert_eq!(d.key, WorkerKey { worker: 5, dp_rank: 3 });
  req.request_id = "b";
  req.pinned_dp_rank = Some(4);
  assert!(matches!(core.route(&mut index, &req, 0.0, Mode::Book), Err(RouteError::NoEligibleWorker(_))));
  req.pinned_worker = Some(6);
  req.pinned_dp_rank = None;
  let err = core.route(&mut index, &req, 0.0, Mode::Book).unwrap_err();
  assert_eq!(err.message(), "no eligible worker: pinned worker 6 is not in the pool");
  assert_eq!(core.active_requests(), 1, "failed routes book nothing");
}

#[test]
fn busy_workers_are_skipped_then_none_left() {
  let mut core = core_with(2, |c| c.busy_prefill_tokens = Some(100));
  let mut index = FakeIndex::default();
  let a = core.route(&mut index, &RouteRequest::new("a", &tokens(0, 100)), 0.0, Mode::Book).unwrap();
  let b = core.route(&mut index, &RouteRequest::new("b", &tokens(0, 100)), 0.0, Mode::Book).unwrap();
  assert_ne!(a.key, b.key);
  let err = core.route(&mut index, &RouteRequest::new("c", &tokens(0, 4)), 0.0, Mode::Book).unwrap_err();
  assert_eq!(err.code(), "no_eligible_worker");
  assert!(err.message().contains("2 busy"), "{}", err.message());
  core.mark_prefill_completed("a", 1.0);
  assert_eq!(core.route(&mut index, &RouteRequest::new("c", &tokens(0, 4)), 1.0, Mode::Book).unwrap().key, a.key);
}

#[test]
fn backpressure_refuses_past_the_queue_cap_with_a_retry_hint() {
  let mut core = core_with(2, |c| c.max_queued_prefill_tokens = Some(100));
  let mut index = FakeIndex::default();
  // Alone in an empty queue, even a request over the cap is admitted.
  core.route(&mut index, &RouteRequest::new("huge", &tokens(0, 150)), 0.0, Mode::Book).unwrap();
  core.mark_prefill_completed("huge", 500.0);
  core.route(&mut index, &RouteRequest::new("a", &tokens(0, 60)), 500.0, Mode::Book).unwrap();
  let err = core.route(&mut index, &RouteRequest::new("b", &tokens(1000, 60)), 600.0, Mode::Book).unwrap_err();
  let RouteError::Backpressure { retry_after_ms, message } = err else { panic!("{err:?}") };
  assert!(message.contains("maxQueuedPrefillTokens 100"), "{message}");
  // 150 tokens drained over the last ~600 ms; 20 tokens over the cap.
  assert!((10.0..1000.0).contains(&retry_after_ms), "{retry_after_ms}");
  // A cached prefix books fewer tokens and may fit.
  cache(&mut index, 0, &tokens(2000, 60), 15);
  assert!(core.route(&mut index, &RouteRequest::new("b", &tokens(2000, 60)), 600.0, Mode::Book).is_ok());
}

#[test]
fn duplicate_ids_and_queries_book_nothing() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 16);
  core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Book).unwrap();
  let err = core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Book).unwrap_err();
  assert_eq!(err.code(), "duplicate_request_id");
  let before = core.totals();
  // A query may reuse a booked id: it books nothing.
  core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Query).unwrap();
  core.route(&mut index, &RouteRequest::new("", &t), 0.0, Mode::Query).unwrap();
  assert_eq!(core.totals(), before);
  assert_eq!(core.stats().booked, 1);
  assert!(matches!(core.route(&mut index, &RouteRequest::new("", &t), 0.0, Mode::Book), Err(RouteError::InvalidArgument(_))));
}

#[test]
fn query_predicts_the_next_route() {
  let mut core = core_with(8, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 16);
  for i in 0..50 {
    let q = core.route(&mut index, &RouteRequest::new("", &t), 0.0, Mode::Query).unwrap();
    let id = format!("r{i}");
    let d = core.route(&mut index, &RouteRequest::new(&id, &t), 0.0, Mode::Book).unwrap();
    assert_eq!(q.key, d.key);
    core.free(&id, 0.0);
  }
}

#[test]
fn approximate_mode_records_booked_decisions_only() {
  let mut core = core_with(2, |c| c.approximate = true);
  let mut index = FakeIndex::default();
  let t = tokens(0, 32);
  core.route(&mut index, &RouteRequest::new("", &t), 0.0, Mode::Query).unwrap();
  assert!(index.recorded.is_empty());
  let d = core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Book).unwrap();
  assert_eq!(index.recorded, vec![(d.key, 8)]);
  core.free("a", 0.0);
  // The recorded prefix now attracts the same prompt.
  let again = core.route(&mut index, &RouteRequest::new("b", &t), 0.0, Mode::Book).unwrap();
  assert_eq!((again.key, again.overlap_blocks), (d.key, 8));
}

#[test]
fn seeds_and_multimodal_items_change_the_hashes() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 16);
  cache(&mut index, 1, &t, 4);
  assert_eq!(core.route(&mut index, &RouteRequest::new("", &t), 0.0, Mode::Query).unwrap().overlap_blocks, 4);
  let mut lora = RouteRequest::new("", &t);
  lora.hash_seed = crate::hash::block_seed(Some("adapter"), None);
  assert_eq!(core.route(&mut index, &lora, 0.0, Mode::Query).unwrap().overlap_blocks, 0);
  let mut mm = RouteRequest::new("", &t);
  let (offsets, hashes) = ([0u32, 0, 0, 1], [77u64]);
  mm.multimodal = Some(Multimodal { offsets: &offsets, hashes: &hashes });
  // Blocks 0 and 1 plain, block 2 carries an image: the match stops there.
  assert_eq!(core.route(&mut index, &mm, 0.0, Mode::Query).unwrap().overlap_blocks, 2);
  let bad = [0u32, 2];
  mm.multimodal = Some(Multimodal { offsets: &bad, hashes: &hashes });
  assert!(matches!(core.route(&mut index, &mm, 0.0, Mode::Query), Err(RouteError::InvalidArgument(_))));
}

#[test]
fn stale_bookings_expire_lazily_from_route() {
  let mut core = core_with(2, |c| c.stale_booking_ms = 1000.0);
  let mut index = FakeIndex::default();
  core.route(&mut index, &RouteRequest::new("old", &tokens(0, 8)), 0.0, Mode::Book).unwrap();
  core.route(&mut index, &RouteRequest::new("new", &tokens(0, 8)), 1500.0, Mode::Book).unwrap();
  assert_eq!(core.stats().expired, 1);
  assert!(!core.free("old", 1500.0));
  assert_eq!(core.expire_stale(1600.0), 0);
  assert_eq!(core.expire_stale(2500.0), 1);
  assert!(core.is_unloaded());
}

#[test]
fn removed_workers_keep_bookings_until_freed_and_candidates_stay_capped() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 40);
  let mut req = RouteRequest::new("a", &t);
  req.pinned_worker = Some(1);
  core.route(&mut index, &req, 0.0, Mode::Book).unwrap();
  assert!(core.remove_worker(1));
  assert_eq!(core.load().iter().map(|l| l.key.worker).collect::<Vec<_>>(), vec![0, 1]);
  assert_eq!(core.route(&mut index, &RouteRequest::new("b", &tokens(0, 40)), 0.0, Mode::Book).unwrap().key, key(0));
  assert!(core.free("a", 0.0));
  assert_eq!(core.load().len(), 1);
  assert!(core.free("b", 0.0));
  assert!(core.is_unloaded());
}

#[test]
fn explanation_lists_at_most_eight_with_the_chosen_one() {
  let mut core = core_with(20, |c| c.temperature = 50.0);
  let mut index = FakeIndex::default();
  let t = tokens(0, 40);
  for w in 0..20 {
    cache(&mut index, w, &t, (w % 10) as usize);
  }
  for i in 0..200 {
    let id = format!("r{i}");
    let d = core.route(&mut index, &RouteRequest::new(&id, &t), 0.0, Mode::Book).unwrap();
    let ex = core.explanation();
    assert!(ex.len() == MAX_EXPLAINED);
    assert!(ex.iter().any(|c| c.key == d.key));
    assert!(ex[..MAX_EXPLAINED - 1].windows(2).all(|w| w[0].cost <= w[1].cost));
    core.free(&id, 0.0);
  }
}

#[test]
fn thousands_of_random_operations_end_at_zero_load() {
  let mut rng = Rng::with_seed(5);
  let mut core = core_with(4, |c| {
    c.stale_booking_ms = 5_000.0;
    c.max_queued_prefill_tokens = Some(4_000);
    c.busy_prefill_tokens = Some(1_500);
  });
  let mut index = FakeIndex::default();
  let mut live: Vec<String> = Vec::new();
  let mut now = 0.0;
  for i in 0..20_000 {
    now += rng.f64() * 5.0;
    match rng.u32(0..12) {
      0..=4 => {
        let id = format!("r{i}");
        let t = tokens(rng.u32(0..4) * 1000, rng.usize(0..200));
        let mut req = RouteRequest::new(&id, &t);
        req.expected_output_tokens = Some(rng.u64(1..50));
        if rng.u32(0..5) == 0 {
          req.pinned_worker = Some(rng.u64(0..6));
        }
        if core.route(&mut index, &req, now, Mode::Book).is_ok() {
          live.push(id);
        }
      }
      5..=6 if !live.is_empty() => {
        let id = &live[rng.usize(0..live.len())];
        core.mark_prefill_completed(id, now);
      }
      7..=8 if !live.is_empty() => {
        let id = &live[rng.usize(0..live.len())];
        core.add_output_tokens(id, rng.u64(1..20), now);
      }
      9..=10 if !live.is_empty() => {
        let id = live.swap_remove(rng.usize(0..live.len()));
        core.free(&id, now);
      }
      _ => match rng.u32(0..3) {
        0 => {
          core.remove_worker(rng.u64(0..6));
        }
        1 => core.upsert_worker(WorkerSpec { worker: rng.u64(0..6), dp_size: rng.u32(1..3), kv_capacity_blocks: None, ttft: None }).unwrap(),
        _ => {
          core.expire_stale(now);
        }
      },
    }
  }
  for id in live {
    core.free(&id, now);
  }
  assert!(core.is_unloaded());
  assert_eq!(core.totals(), Totals::default());
  let s = core.stats();
  assert_eq!(s.booked, s.freed + s.expired);
  assert!(s.expired > 0 && s.freed > 0);
}

/// Announces core `a`'s last booking (`id` on the worker it chose) to core `b`, as replica "A".
fn announce(a: &RoutingCore, d: &Decision, id: &str, prompt: usize, b: &mut RoutingCore, index: &mut FakeIndex) -> bool {
  let booking = RemoteBooking {
    origin: "A",
    request_id: id,
    key: d.key,
    local_hashes: a.last_local_hashes(),
    prompt_tokens: prompt as u64,
    overlap_blocks: d.overlap_blocks,
    expected_output_tokens: None,
  };
  b.apply_remote_booking(index, &booking, 0.0).unwrap()
}

#[test]
fn another_replicas_booking_loads_the_same_worker_here() {
  let (mut a, mut b) = (core_with(2, |_| {}), core_with(2, |_| {}));
  let (mut ia, mut ib) = (FakeIndex::default(), FakeIndex::default());
  let t = tokens(0, 40);
  let d = a.route(&mut ia, &RouteRequest::new("r1", &t), 0.0, Mode::Book).unwrap();
  assert!(announce(&a, &d, "r1", t.len(), &mut b, &mut ib));
  assert!(!announce(&a, &d, "r1", t.len(), &mut b, &mut ib), "a repeated announcement books nothing");
  assert_eq!(a.load(), b.load(), "the same load on the same rank");
  assert_eq!(b.stats().booked, 0, "not counted among this replica's own");
  assert_eq!(b.remote_origins(), vec![("A", 1)]);
  assert_eq!(b.totals().requests, 1);
  // The booked worker is now the costlier one on b as well.
  let next = b.route(&mut ib, &RouteRequest::new("r2", &tokens(1000, 40)), 0.0, Mode::Book).unwrap();
  assert_ne!(next.key, d.key);
  assert!(b.mark_remote_prefill_completed("A", "r1", 1.0));
  assert!(b.free_remote("A", "r1", 2.0));
  assert!(b.free("r2", 2.0));
  assert!(b.is_unloaded());
  assert!(ib.recorded.is_empty(), "events mode records nothing");
}

#[test]
fn approximate_replicas_record_each_others_decisions_and_drop_a_silent_one() {
  let (mut a, mut b) = (core_with(2, |c| c.approximate = true), core_with(2, |c| c.approximate = true));
  let (mut ia, mut ib) = (FakeIndex::default(), FakeIndex::default());
  let t = tokens(0, 16);
  let d = a.route(&mut ia, &RouteRequest::new("r1", &t), 0.0, Mode::Book).unwrap();
  assert!(announce(&a, &d, "r1", t.len(), &mut b, &mut ib));
  assert_eq!(ib.recorded, vec![(d.key, 4)]);
  assert_eq!(ia.held, ib.held, "both indexes predict the same cache");
  assert_eq!(b.drop_replica("A", 5.0), 1);
  assert!(b.is_unloaded());
  assert_eq!(b.remote_stats().dropped, 1);
}

#[test]
fn a_remote_booking_needs_its_origin_and_id() {
  let mut b = core_with(1, |_| {});
  let booking =
    RemoteBooking { origin: "", request_id: "x", key: key(0), local_hashes: &[], prompt_tokens: 1, overlap_blocks: 0, expected_output_tokens: None };
  assert!(b.apply_remote_booking(&mut FakeIndex::default(), &booking, 0.0).is_err());
  assert!(b.is_unloaded());
}

#[test]
fn lower_tier_blocks_earn_their_tier_credit_and_leave_the_prefill_queue() {
  let mut core = core_with(2, |_| {});
  let mut index = FakeIndex::default();
  let t = tokens(0, 32); // 8 blocks
                         // Worker 0: 4 blocks on the device. Worker 1: 8 blocks on host memory (credit 0.75 each = 6).
  cache(&mut index, 0, &t, 4);
  index.lower.insert(key(1), TierExtension { blocks: [8, 0, 0] });
  let d = core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Query).unwrap();
  assert_eq!(d.key, key(1));
  assert_eq!((d.overlap_blocks, d.lower.blocks, d.cached_tokens, d.prefill_tokens), (0, [8, 0, 0], 32, 0));
  let ex = core.explanation();
  // 8 prefill blocks - 6 credit + 8 new decode blocks, against 8 - 4 + 8.
  assert_eq!((ex[0].key, ex[0].lower.blocks, ex[0].cost), (key(1), [8, 0, 0], 10.0));
  assert_eq!((ex[1].key, ex[1].cost), (key(0), 12.0));
  // On disk (credit 0.25 each = 2) the device prefix wins.
  index.lower.insert(key(1), TierExtension { blocks: [0, 8, 0] });
  assert_eq!(core.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Query).unwrap().key, key(0));
  // With host credit 0, the lower tier earns nothing.
  let mut plain = core_with(2, |c| c.tier_credit = [0.0, 0.25, 0.25]);
  index.lower.insert(key(1), TierExtension { blocks: [8, 0, 0] });
  plain.route(&mut index, &RouteRequest::new("a", &t), 0.0, Mode::Query).unwrap();
  assert_eq!(plain.explanation()[0].key, key(0));
  let err = RoutingCore::new(RoutingConfig { tier_credit: [0.75, -1.0, 0.25], ..RoutingConfig::new(BS) }).err().unwrap();
  assert!(err.contains("tierCredit.disk"), "{err}");
}

#[test]
fn ttft_weighs_cached_work_against_queued_work_without_tuning() {
  let mut core = core_with(2, |c| c.policy = Policy::Ttft);
  let mut index = FakeIndex::default();
  let hot = tokens(0, 400); // 100 blocks
  cache(&mut index, 0, &hot, 100);
  // The cached worker wins while it is idle, with a cost in milliseconds.
  let d = core.route(&mut index, &RouteRequest::new("a", &hot), 0.0, Mode::Book).unwrap();
  assert_eq!((d.key, d.policy), (key(0), Policy::Ttft));
  let ex = core.explanation();
  assert!(ex[0].cost > 0.0 && ex[0].cost < ex[1].cost, "{ex:?}");
  // Pile uncached work on worker 0 until computing the prompt elsewhere is faster.
  for i in 0..4 {
    let other = tokens(10_000 * (i + 1), 32_000);
    core.route(&mut index, &RouteRequest { pinned_worker: Some(0), ..RouteRequest::new(&format!("busy{i}"), &other) }, 0.0, Mode::Book).unwrap();
  }
  let d = core.route(&mut index, &RouteRequest::new("b", &hot), 0.0, Mode::Query).unwrap();
  assert_eq!(d.key, key(1), "{:?}", core.explanation());
  // A worker's own model overrides the pool's: a much faster worker 1 wins even when idle ones tie.
  let fast = TtftModel { prefill: [0.0, 1e-4, 0.1], ..TtftModel::default() };
  let mut core = core_with(0, |c| c.policy = Policy::Ttft);
  core
    .set_workers(&[
      WorkerSpec { worker: 0, dp_size: 1, kv_capacity_blocks: None, ttft: None },
      WorkerSpec { worker: 1, dp_size: 1, kv_capacity_blocks: None, ttft: Some(fast) },
    ])
    .unwrap();
  let d = core.route(&mut index, &RouteRequest::new("c", &tokens(50_000, 64)), 0.0, Mode::Query).unwrap();
  assert_eq!(d.key, key(1));
}

#[test]
fn ttft_charges_a_choice_its_own_prefill_work_so_a_few_ms_do_not_buy_a_recomputed_prefix() {
  let mut core = core_with(2, |c| c.policy = Policy::Ttft);
  let mut index = FakeIndex::default();
  let hot = tokens(0, 4000); // 1,000 blocks, all cached on worker 0
  cache(&mut index, 0, &hot, 1000);
  // Worker 0 has 4,096 tokens of other prefill booked: the prompt's first token would come a few
  // ms sooner on idle worker 1, which would recompute all 4,000 tokens.
  core.route(&mut index, &RouteRequest { pinned_worker: Some(0), ..RouteRequest::new("busy", &tokens(100_000, 4096)) }, 0.0, Mode::Book).unwrap();
  let d = core.route(&mut index, &RouteRequest::new("a", &hot), 0.0, Mode::Query).unwrap();
  assert_eq!(d.key, key(0), "{:?}", core.explanation());
  let m = TtftModel::default();
  let ex = core.explanation();
  let (on0, on1) = (ex.iter().find(|c| c.key == key(0)).unwrap(), ex.iter().find(|c| c.key == key(1)).unwrap());
  // Worker 1's score is its TTFT plus the same prefill again: twice one step of 4,000 tokens.
  let step = |n: f64| m.prefill[0] * n * n + m.prefill[1] * n + m.prefill[2];
  assert!((on1.cost - 2.0 * step(4000.0)).abs() < 1e-6, "{on1:?}");
  assert!(on0.cost < on1.cost);
}
