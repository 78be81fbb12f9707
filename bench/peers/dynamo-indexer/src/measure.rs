//! Clocks and counters: per-call timing with the clock's own cost subtracted (as
//! bench/lib/timer.ts does for kvroute), the heap in use (glibc's own accounting, which costs the
//! allocations nothing, unlike a counting allocator would), and a count of the events Dynamo's
//! thread pool refused (its worker threads only log them, at WARN).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Median cost of two back-to-back clock reads, in ns.
pub fn clock_overhead_ns() -> u64 {
    let mut xs: Vec<u64> = (0..20_001)
        .map(|_| {
            let t0 = Instant::now();
            black_box(Instant::now().duration_since(t0).as_nanos() as u64)
        })
        .collect();
    xs.sort_unstable();
    xs[xs.len() / 2]
}

/// `samples` timings of `call(i)`, one call per sample, clock cost subtracted. `prepare(i)` runs
/// outside the timed region (an argument the call consumes); what `call` returns is dropped
/// outside it too, as kvroute's results are collected by the GC later.
pub fn sample<A, R>(
    samples: usize,
    warmup: usize,
    overhead_ns: u64,
    mut prepare: impl FnMut(usize) -> A,
    mut call: impl FnMut(A) -> R,
) -> Vec<u64> {
    for i in 0..warmup {
        black_box(call(prepare(i)));
    }
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples {
        let arg = prepare(warmup + i);
        let t0 = Instant::now();
        let r = call(arg);
        let ns = t0.elapsed().as_nanos() as u64;
        black_box(r);
        out.push(ns.saturating_sub(overhead_ns));
    }
    out
}

#[repr(C)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

extern "C" {
    fn mallinfo2() -> MallInfo2;
}

/// Bytes the process has allocated and not freed, over every malloc arena (glibc >= 2.33).
pub fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct by value.
    let m = unsafe { mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}

/// Resident set size in bytes (/proc/self/statm), for the report's context.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    pages * 4096
}

static WARNINGS: AtomicU64 = AtomicU64::new(0);

/// WARN and ERROR events logged so far (Dynamo logs "Failed to apply event" at WARN).
pub fn warnings_logged() -> u64 {
    WARNINGS.load(Ordering::Relaxed)
}

/// Counts WARN and ERROR events and nothing else: every other call site stays disabled, so the
/// subscriber costs the measured paths nothing.
struct WarningCounter;

impl tracing::Subscriber for WarningCounter {
    fn register_callsite(&self, meta: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        if *meta.level() <= tracing::Level::WARN {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
    fn enabled(&self, meta: &tracing::Metadata<'_>) -> bool {
        *meta.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() <= tracing::Level::WARN {
            WARNINGS.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

pub fn count_warnings() {
    tracing::subscriber::set_global_default(WarningCounter).expect("no other tracing subscriber is installed");
}

#[repr(C)]
struct TimeVal {
    sec: i64,
    usec: i64,
}

#[repr(C)]
struct RUsage {
    utime: TimeVal,
    stime: TimeVal,
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut RUsage) -> i32;
}

/// CPU seconds this process has used, every thread (getrusage RUSAGE_SELF), user and system.
pub fn cpu_seconds() -> f64 {
    let mut u = RUsage { utime: TimeVal { sec: 0, usec: 0 }, stime: TimeVal { sec: 0, usec: 0 }, rest: [0; 14] };
    // SAFETY: getrusage writes one struct rusage (its layout above, x86_64/aarch64 Linux) into `u`.
    let rc = unsafe { getrusage(0, &mut u) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) failed");
    let t = |v: &TimeVal| v.sec as f64 + v.usec as f64 / 1e6;
    t(&u.utime) + t(&u.stime)
}
