use super::*;
use crate::load::{BookRequest, LoadBook, WorkerKey};

const BS: u64 = 16;

fn model() -> TtftModel {
  TtftModel::default()
}

fn input<'a>(rank: &'a RankLoad, prompt_tokens: u64, cached_blocks: u64) -> TtftInput<'a> {
  TtftInput { rank, block_size: BS, prompt_tokens, cached_blocks, lower: TierExtension::default(), capacity_blocks: Some(1000), decode_blocks: 0.0 }
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
    book.book(&BookRequest { request_id: &id, rank, block_hashes: &seq, prompt_tokens: prompt, overlap_blocks: 0, expected_output_tokens: None, now_ms: 0.0 }).unwrap();
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

#[test]
fn queued_prefill_runs_first_in_full_steps_with_a_decode_pass_each() {
  let m = model();
  let book = loaded(2, 8000);
  let rank = book.rank(0);
  assert_eq!((rank.prefill_tokens(), rank.requests()), (16_000, 2));
  let mut x = input(rank, 1000, 0);
  x.decode_blocks = 500.0;
  let e = estimate(&m, &x);
  // 17,000 tokens in steps of 8190 (two tokens of each step decode the running requests).
  let chunk = 8190.0;
  let decode = {
    let [a, b, c] = m.decode;
    (a * 0.25 + b * 0.5 + c).max(m.decode_min_ms)
  };
  let want = 2.0 * step(&m, chunk) + step(&m, 17_000.0 - 2.0 * chunk) + 3.0 * decode;
  assert!((e.ms - want).abs() < 1e-6, "{} vs {want}", e.ms);
  // More queued work ahead: later.
  let busier = loaded(3, 8000);
  assert!(estimate(&m, &input(busier.rank(0), 1000, 0)).ms > e.ms);
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
  // Queued work delays the first token, not the request's own work; a long prompt takes full steps.
  let book = loaded(1, 8000);
  let e = estimate(&m, &input(book.rank(0), 20_000, 0));
  let chunk = 8191.0;
  let want = 2.0 * step(&m, chunk) + step(&m, 20_000.0 - 2.0 * chunk);
  assert!((e.work_ms - want).abs() < 1e-6, "{} vs {want}", e.work_ms);
  assert!(e.ms > e.work_ms);
  assert!((e.score() - e.ms - e.work_ms).abs() < 1e-9);
}
