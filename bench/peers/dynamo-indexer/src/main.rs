//! `kvroute-dynamo-indexer <workload file>`: loads kvroute's indexer workload, checks that Dynamo
//! hashes its tokens as kvroute did, then answers one command per stdin line with one JSON line
//! on stdout, so that bench/peers/dynamo-indexer.ts can alternate rounds between this process and
//! kvroute's (this process idles, its event threads blocked, while kvroute is measured).
//!
//! Commands: `build`, `remove`, `scores`, `latency <samples> <round>`, `hash <samples>`, `quit`.
//!
//! `kvroute-dynamo-indexer --fleet <timeline file>`: the fleet-scale timeline instead (fleet.rs);
//! commands `replay <window ms>` and `quit`.

mod dynamo;
mod fleet;
mod measure;
mod workload;

use std::io::{BufRead, Write};

use dynamo_kv_router::protocols::{compute_block_hash_for_seq, BlockHashOptions, LocalBlockHash};
use serde_json::{json, Value};

use dynamo::Indexers;
use workload::Workload;

/// Blocks whose Dynamo hash differs from kvroute's, over every stored event and query.
fn hash_mismatches(w: &Workload) -> (u64, u64) {
    let mut checked = 0u64;
    let mut differ = 0u64;
    let sequences = w.stored.iter().map(|e| (&e.tokens, &e.local_hashes)).chain(w.queries.iter().map(|q| (&q.tokens, &q.local_hashes)));
    for (tokens, local) in sequences {
        let ours = compute_block_hash_for_seq(tokens, w.block_size, BlockHashOptions::default());
        checked += local.len() as u64;
        differ += ours.iter().zip(local.iter()).filter(|(a, b)| a.0 != **b).count() as u64;
        differ += ours.len().abs_diff(local.len()) as u64;
    }
    (checked, differ)
}

fn query_hashes(w: &Workload) -> Vec<Vec<LocalBlockHash>> {
    w.queries.iter().map(|q| q.local_hashes.iter().map(|&h| LocalBlockHash(h)).collect()).collect()
}

struct State {
    workload: Workload,
    queries: Vec<Vec<LocalBlockHash>>,
    indexers: Option<Indexers>,
    overhead_ns: u64,
}

impl State {
    fn indexers(&mut self) -> Result<&mut Indexers, String> {
        self.indexers.as_mut().ok_or_else(|| "send `build` first".to_string())
    }

    fn handle(&mut self, line: &str) -> Result<Value, String> {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or("");
        let mut number = |name: &str| -> Result<usize, String> {
            words.next().and_then(|s| s.parse().ok()).ok_or_else(|| format!("{command} needs <{name}>"))
        };
        match command {
            "build" => {
                // The previous build goes first, so that the heap figure is this build's alone.
                self.indexers = None;
                let b = dynamo::build(&self.workload, self.workload.block_size);
                let (radix_blocks, pool_blocks) = b.indexers.blocks();
                self.indexers = Some(b.indexers);
                let built = |x: &dynamo::Built, blocks: usize| {
                    json!({ "seconds": x.applied.seconds, "rejected": x.applied.rejected, "heap_bytes": x.heap_bytes, "blocks": blocks })
                };
                Ok(json!({ "type": "built", "events": self.workload.stored.len(), "radix": built(&b.radix, radix_blocks), "pool": built(&b.pool, pool_blocks), "rss_bytes": measure::rss_bytes() }))
            }
            "remove" => {
                let w = &self.workload;
                let ix = self.indexers.as_mut().ok_or_else(|| "send `build` first".to_string())?;
                let (radix, pool) = ix.remove(w);
                let (radix_blocks, pool_blocks) = ix.blocks();
                let applied = |a: &dynamo::Applied, blocks: usize| json!({ "seconds": a.seconds, "rejected": a.rejected, "blocks": blocks });
                Ok(json!({ "type": "removed", "events": w.removed.len(), "radix": applied(&radix, radix_blocks), "pool": applied(&pool, pool_blocks) }))
            }
            "scores" => {
                let queries = self.queries.clone();
                let ix = self.indexers()?;
                let radix: Vec<Vec<u64>> = queries.iter().map(|q| dynamo::flatten(&ix.radix_find(q.clone()))).collect();
                let pool: Vec<Vec<u64>> = queries.iter().map(|q| dynamo::flatten(&ix.pool_find(q.clone()))).collect();
                Ok(json!({ "type": "scores", "radix": radix, "pool": pool }))
            }
            "latency" => {
                let samples = number("samples")?;
                let round = number("round")?;
                let overhead = self.overhead_ns;
                let queries = self.queries.clone();
                let n = queries.len();
                let ix = self.indexers()?;
                let warmup = samples.min(500);
                let mut radix = Vec::new();
                let mut pool = Vec::new();
                // The two take turns going first, round after round.
                for turn in 0..2 {
                    if (turn + round) % 2 == 0 {
                        radix = measure::sample(samples, warmup, overhead, |i| queries[i % n].clone(), |q| ix.radix_find(q));
                    } else {
                        pool = measure::sample(samples, warmup, overhead, |i| queries[i % n].clone(), |q| ix.pool_find(q));
                    }
                }
                Ok(json!({ "type": "latency", "radix_ns": radix, "pool_ns": pool }))
            }
            "hash" => {
                let samples = number("samples")?;
                let w = &self.workload;
                let n = w.queries.len();
                let ns = measure::sample(samples, samples.min(200), self.overhead_ns, |i| &w.queries[i % n].tokens, |t| {
                    compute_block_hash_for_seq(t, w.block_size, BlockHashOptions::default())
                });
                Ok(json!({ "type": "hash", "tokens": w.queries.first().map_or(0, |q| q.tokens.len()), "ns": ns }))
            }
            other => Err(format!("unknown command `{other}`")),
        }
    }
}

/// One JSON line per command until `quit`.
fn serve(ready: Value, mut handle: impl FnMut(&str) -> Result<Value, String>) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{ready}").and_then(|_| out.flush()).expect("stdout is open");
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin is readable");
        if line.trim() == "quit" {
            break;
        }
        let reply = handle(&line).unwrap_or_else(|error| json!({ "type": "error", "error": error }));
        writeln!(out, "{reply}").and_then(|_| out.flush()).expect("stdout is open");
    }
}

fn read_or_exit(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(2);
    })
}

fn fleet_main(path: &str) {
    let fleet = fleet::parse(&read_or_exit(path)).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    measure::count_warnings();
    let ready = json!({ "type": "ready", "crate": "dynamo-kv-router 1.6.1", "event_threads": dynamo::EVENT_THREADS, "ops": fleet.ops.len(), "workers": fleet.workers });
    serve(ready, |line| {
        let mut words = line.split_whitespace();
        match words.next().unwrap_or("") {
            "replay" => {
                let window: f64 = words.next().and_then(|s| s.parse().ok()).filter(|w: &f64| w.is_finite() && *w >= 0.0).ok_or("replay needs <window ms>")?;
                Ok(fleet::replay(&fleet, window))
            }
            other => Err(format!("unknown command `{other}`")),
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--fleet" {
        return fleet_main(&args[2]);
    }
    let Some(path) = args.get(1).cloned() else {
        eprintln!("usage: kvroute-dynamo-indexer <workload file>");
        std::process::exit(2);
    };
    let bytes = read_or_exit(&path);
    let workload = workload::parse(&bytes).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    drop(bytes);
    measure::count_warnings();
    let (checked, differ) = hash_mismatches(&workload);
    let queries = query_hashes(&workload);
    let mut state = State { overhead_ns: measure::clock_overhead_ns(), queries, workload, indexers: None };

    let ready = json!({
        "type": "ready",
        "crate": "dynamo-kv-router 1.6.1",
        "event_threads": dynamo::EVENT_THREADS,
        "block_size": state.workload.block_size,
        "stored": state.workload.stored.len(),
        "removed": state.workload.removed.len(),
        "queries": state.workload.queries.len(),
        "hash_check": { "blocks": checked, "mismatches": differ },
        "clock_overhead_ns": state.overhead_ns,
    });
    serve(ready, |line| state.handle(line));
}
