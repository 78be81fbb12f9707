use super::*;
use crate::load::{BookRequest, LoadBook, WorkerKey};

const BS: u64 = 16;

fn model() -> TtftModel {
  TtftModel::default()
}

fn input<'a>(rank: &'a RankLoad, prompt_tokens: u64, cached_blocks: u64) -> TtftInput<'a> {
  TtftInput {
    rank,
    block_size: BS,
    prompt_tokens,
    cached_blocks,
    lower: TierExtension::default(),
    capacity_blocks: Some(1000),
    decode_blocks: 0.0,
    now_ms: 0.0,
    engine_priority: None,
  }
}

fn step(m: &TtftModel, n: f64) -> f64 {
  let [a, b, c] = m.prefill;
  a * n * n + b * n + c
}

/// A book with one rank holding `requests` bookings of `prompt` uncached tokens each.
fn loaded(requests: usize, prompt: u64) -> LoadBook {
  let mut book = LoadBook::new(BS as u32);
  let rank = book.list_rank(WorkerKey { worker: 0, dp_rank: 0 });
  for i in 0..requests {
    let id = format!("r{i}");
    let seq: Vec<u64> = (0..prompt / BS).map(|b| (i as u64) << 32 | b).collect();
    book
      .book(&BookRequest {
        request_id: &id,
        rank,
        block_hashes: &seq,
        prompt_tokens: prompt,
        overlap_blocks: 0,
        expected_output_tokens: None,
        priority: 0,
        now_ms: 0.0,
      })
      .unwrap();
  }
  book
}

#[test]
fn an_idle_rank_takes_one_step_of_the_uncached_tokens() {
  let m = model();
  let idle = RankLoad::default();
  let e = estimate(&m, &input(&idle, 1000, 0));
  assert_eq!(e.uncached_tokens, 1000);
  assert!((e.ms - step(&m, 1000.0)).abs() < 1e-9);
  // 40 cached blocks of 16: 360 tokens left.
  let e = estimate(&m, &input(&idle, 1000, 40));
  assert_eq!(e.uncached_tokens, 360);
  assert!((e.ms - step(&m, 360.0)).abs() < 1e-9);
  // A fully cached prompt still computes its last token.
  assert_eq!(estimate(&m, &input(&idle, 320, 20)).uncached_tokens, 1);
}

fn decode(m: &TtftModel, usage: f64) -> f64 {
  let [a, b, c] = m.decode;
  (a * usage * usage + b * usage + c).max(m.decode_min_ms)
}

#[test]
fn queued_prefill_runs_first_behind_the_step_in_flight() {
  let m = model();
  // Two prompts of 8000 booked at 0 on an idle rank: its engine starts the first step (8192 tokens) at once.
  let book = loaded(2, 8000);
  let rank = book.rank(0);
  assert_eq!((rank.prefill_tokens(), rank.requests(), rank.prefilling(), rank.decoding()), (16_000, 2, 2, 0));
  let e = estimate(&m, &input(rank, 1000, 0));
  // Nothing decodes yet: steps of 8192 prefill tokens, no decode pass.
  let want = step(&m, 8192.0) + step(&m, 8192.0) + step(&m, 16_000.0 + 1000.0 - 2.0 * 8192.0);
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  // Later, in the second step: what is left of it, then the request's own step.
  let mut x = input(rank, 1000, 0);
  x.now_ms = step(&m, 8192.0) + 10.0;
  let e = estimate(&m, &x);
  let want = step(&m, 16_000.0 - 8192.0) - 10.0 + step(&m, 1000.0);
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  // The last step is never over before a first token is seen: only the request's own step is left.
  x.now_ms = 1e9;
  assert!((estimate(&m, &x).ms - step(&m, 1000.0)).abs() < 1e-6);
  // More queued work ahead: later.
  let busier = loaded(3, 8000);
  assert!(estimate(&m, &input(busier.rank(0), 1000, 0)).ms > estimate(&m, &input(rank, 1000, 0)).ms);
}

#[test]
fn an_engine_scheduling_by_priority_serves_a_class_after_its_own_and_higher_ones_only() {
  let m = model();
  // Three prompts of 8000 at class 0, then one of 3000 at class 1 and one of 2000 at class 2,
  // all booked at 0 on an idle rank: its engine starts the first step at once.
  let mut book = loaded(3, 8000);
  for (id, prompt, priority) in [("p1", 3000u64, 1), ("p2", 2000, 2)] {
    let seq: Vec<u64> = (0..prompt / BS).map(|b| (priority as u64 + 100) << 32 | b).collect();
    book
      .book(&BookRequest {
        request_id: id,
        rank: 0,
        block_hashes: &seq,
        prompt_tokens: prompt,
        overlap_blocks: 0,
        expected_output_tokens: None,
        priority,
        now_ms: 0.0,
      })
      .unwrap();
  }
  let rank = book.rank(0);
  assert_eq!((rank.prefill_tokens(), rank.prefill_tokens_from(1), rank.prefill_tokens_from(2), rank.prefill_tokens_from(3)), (29_000, 5000, 2000, 0));
  let mut x = input(rank, 1000, 0);
  x.now_ms = 10.0;
  let fcfs = estimate(&m, &x);
  // The step in flight (8192 tokens) runs out; then, first come, first served, the rest of the
  // queue and ours.
  let in_flight = step(&m, 8192.0) - 10.0;
  let run = |tokens: f64| (tokens / 8192.0).floor() * step(&m, 8192.0) + step(&m, tokens % 8192.0);
  assert!((fcfs.ms - in_flight - run(29_000.0 - 8192.0 + 1000.0)).abs() < 1e-6, "{}", fcfs.ms);
  // Class 0 waits for everything too. The step in flight started r0 and r1 (its first 192
  // tokens): the rest of r1 (7808) runs first whatever the class; then class 1 waits for the
  // classes 1 and 2 only, class 2 for its own, a higher class for none.
  x.engine_priority = Some(0);
  assert!((estimate(&m, &x).ms - fcfs.ms).abs() < 1e-9);
  for (class, waiting) in [(1, 5000.0), (2, 2000.0), (5, 0.0)] {
    x.engine_priority = Some(class);
    let want = in_flight + run(7808.0 + waiting + 1000.0);
    assert!((estimate(&m, &x).ms - want).abs() < 1e-6, "class {class}: {} vs {want}", estimate(&m, &x).ms);
  }
  // Never more than what is left of the whole queue: near its end, only its last step is left.
  x.now_ms = 3.0 * step(&m, 8192.0) + 1.0;
  x.engine_priority = Some(1);
  let late = estimate(&m, &x);
  x.engine_priority = None;
  assert!((late.ms - estimate(&m, &x).ms).abs() < 1e-9);
  // A class's tokens leave the queue with its first token, exactly.
  assert!(book.mark_prefill_completed("p1", 50.0));
  assert!(book.free("p2", 60.0));
  assert_eq!((book.rank(0).prefill_tokens_from(1), book.rank(0).prefill_tokens()), (0, 24_000));
}

#[test]
fn a_first_token_restarts_the_queue_and_decodes_take_their_share_of_each_step() {
  let m = model();
  let mut book = loaded(2, 8000);
  assert!(book.mark_prefill_completed("r0", 500.0));
  let rank = book.rank(0);
  assert_eq!((rank.prefill_tokens(), rank.decoding(), rank.prefill_since_ms()), (8000, 1, 500.0));
  let mut x = input(rank, 1000, 0);
  x.now_ms = 500.0;
  x.decode_blocks = 500.0;
  let d = decode(&m, 0.5);
  // r1's 8000 tokens in the step started at 500 (one token of the budget decodes r0), then ours.
  let want = step(&m, 8000.0) + d + step(&m, 1000.0) + d;
  let e = estimate(&m, &x);
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  // A prompt longer than a step: steps of 8191 (8192 less r0's decode token).
  x.prompt_tokens = 20_000;
  let want = step(&m, 8000.0) + d + 2.0 * (step(&m, 8191.0) + d) + step(&m, 20_000.0 - 2.0 * 8191.0) + d;
  assert!((estimate(&m, &x).ms - want).abs() < 1e-6);
}

#[test]
fn a_decoding_rank_packs_arrivals_into_its_next_step() {
  let m = model();
  let mut book = loaded(1, 800);
  assert!(book.mark_prefill_completed("r0", 100.0));
  // r0 decodes; a prompt booked at 1000 waits for the decode step in flight (half of one on
  // average), and one arriving with it joins the same step.
  let rank_id = 0;
  let seq: Vec<u64> = (0..50).map(|b| 7 << 32 | b).collect();
  book
    .book(&BookRequest {
      request_id: "a",
      rank: rank_id,
      block_hashes: &seq,
      prompt_tokens: 800,
      overlap_blocks: 0,
      expected_output_tokens: None,
      priority: 0,
      now_ms: 1000.0,
    })
    .unwrap();
  let rank = book.rank(rank_id);
  assert!(rank.prefill_after_step());
  let mut x = input(rank, 1000, 0);
  x.now_ms = 1000.0;
  let d = decode(&m, 0.0);
  let e = estimate(&m, &x);
  let want = d / 2.0 + step(&m, 1800.0) + d;
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  // Joining "a"'s step lengthens it for "a" too: the score charges that with the request's own work.
  let shared = step(&m, 1800.0) - step(&m, 800.0);
  assert!((e.work_ms - step(&m, 1000.0) - shared).abs() < 1e-6, "{}", e.work_ms);
  // Once that step is under way, a newcomer waits for it instead.
  x.now_ms = 1000.0 + d / 2.0 + 1.0;
  let want = step(&m, 800.0) + d - 1.0 + step(&m, 1000.0) + d;
  let e = estimate(&m, &x);
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  assert!((e.work_ms - step(&m, 1000.0)).abs() < 1e-6, "nothing left to share a step with");
}

#[test]
fn lower_tier_blocks_cost_their_reload_instead_of_their_prefill() {
  let m = model();
  let idle = RankLoad::default();
  let mut x = input(&idle, 8000, 0);
  x.lower.blocks = [250, 0, 0];
  let host = estimate(&m, &x);
  assert_eq!(host.uncached_tokens, 4000);
  let want = step(&m, 4000.0) + 4000.0 * m.reload_ms_per_token[0];
  assert!((host.ms - want).abs() < 1e-9);
  assert!(host.ms < estimate(&m, &input(&idle, 8000, 0)).ms, "reloading from host beats computing");
  x.lower.blocks = [0, 250, 0];
  assert!(estimate(&m, &x).ms > host.ms, "disk is slower than host");
  x.lower.blocks = [0, 0, 0];
  x.cached_blocks = 250;
  assert!(estimate(&m, &x).ms < host.ms, "the device beats any reload");
}

#[test]
fn a_decode_pool_pays_the_transfer_of_what_it_lacks() {
  let m = TtftModel { transfer_ms_per_token: 0.01, ..model() };
  let idle = RankLoad::default();
  let none = estimate(&model(), &input(&idle, 1000, 10)).ms;
  assert!((estimate(&m, &input(&idle, 1000, 10)).ms - none - 840.0 * 0.01).abs() < 1e-9);
}

#[test]
fn bad_models_are_refused_by_name() {
  assert!(model().validate().is_ok());
  let cases = [
    (TtftModel { prefill: [f64::NAN, 0.0, 0.0], ..model() }, "ttft.prefill.a"),
    (TtftModel { decode: [0.0, 0.0, f64::INFINITY], ..model() }, "ttft.decode.c"),
    (TtftModel { decode_min_ms: -1.0, ..model() }, "ttft.decode.minMs"),
    (TtftModel { max_batched_tokens: 0, ..model() }, "maxNumBatchedTokens"),
    (TtftModel { reload_ms_per_token: [0.0, -1.0, 0.0], ..model() }, "reloadMsPerToken.disk"),
    (TtftModel { transfer_ms_per_token: f64::NAN, ..model() }, "transferMsPerToken"),
  ];
  for (m, name) in cases {
    let err = m.validate().unwrap_err();
    assert!(err.contains(name), "{err}");
  }
}

#[test]
fn the_work_term_is_the_prefill_of_its_own_uncached_tokens_in_the_rank_s_steps() {
  let m = model();
  let idle = RankLoad::default();
  let e = estimate(&m, &input(&idle, 1000, 40));
  assert!((e.work_ms - step(&m, 360.0)).abs() < 1e-9);
  assert!((e.score() - 2.0 * step(&m, 360.0)).abs() < 1e-9, "idle: the TTFT is the work itself");
  // Queued work delays the first token, not the request's own work; a long prompt takes full
  // steps (of the whole budget: the request booked there is still in prefill, not decoding).
  let book = loaded(1, 8000);
  let e = estimate(&m, &input(book.rank(0), 20_000, 0));
  let chunk = 8192.0;
  let want = 2.0 * step(&m, chunk) + step(&m, 20_000.0 - 2.0 * chunk);
  assert!((e.work_ms - want).abs() < 1e-6, "{} vs {want}", e.work_ms);
  assert!(e.ms > e.work_ms);
  assert!((e.score() - e.ms - e.work_ms).abs() < 1e-9);
}

#[test]
fn a_request_freed_in_prefill_leaves_the_queue_without_marking_progress() {
  let mut book = loaded(2, 8000);
  assert!(book.free("r0", 300.0));
  let rank = book.rank(0);
  // No first token came: the queue's progress is still counted from 0, and nobody decodes.
  assert_eq!((rank.prefill_tokens(), rank.prefilling(), rank.decoding(), rank.prefill_since_ms()), (8000, 1, 0, 0.0));
  assert!(book.mark_prefill_completed("r1", 400.0));
  assert!(book.free("r1", 900.0));
  assert!(book.rank(0).is_empty());
}
