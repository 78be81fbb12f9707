// Timing of many calls with the monotonic high-resolution clock (process.hrtime.bigint).
// Per-call samples for calls of a few microseconds and up; calls shorter than that are timed in
// batches (the clock read costs ~50 ns here), and the measured cost of reading the clock is
// subtracted from every sample.

/** Results go here so the optimiser cannot drop a call whose value is unused. */
export let blackhole: unknown;

export interface SampleOptions {
  /** Calls before measuring (JIT warm-up, caches). Default 200. */
  warmup?: number;
  /** After those calls, go on warming up until this long has passed. Default 50 ms. */
  warmupMs?: number;
  /** Timed samples wanted. */
  samples: number;
  /** Calls per sample: a number, or 'auto' (default) for enough calls to last >= 2 us. */
  batch?: number | 'auto';
  /** Stop sampling after this long even if fewer samples were taken (bounds quick runs). */
  maxMs?: number;
}

export interface Sampled {
  /** Nanoseconds per call, one entry per sample (a batch's mean when batch > 1). */
  perCallNs: Float64Array;
  batch: number;
  /** Clock-read cost subtracted from each sample. */
  overheadNs: number;
}

const MIN_SAMPLE_NS = 2_000;
const DEFAULT_WARMUP_MS = 50;
let clockOverheadNs: number | undefined;

function now(): bigint {
  return process.hrtime.bigint();
}

/** Median cost of one back-to-back clock read pair, measured once per process. */
export function clockOverhead(): number {
  if (clockOverheadNs !== undefined) return clockOverheadNs;
  const n = 20_001;
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = now();
    xs[i] = Number(now() - t0);
  }
  xs.sort();
  clockOverheadNs = xs[n >> 1];
  return clockOverheadNs;
}

/** Calls per sample so that one sample lasts at least MIN_SAMPLE_NS. */
function autoBatch(fn: (i: number) => unknown): number {
  let calls = 1;
  for (;;) {
    let ns = timeCalls(fn, calls);
    if (ns >= MIN_SAMPLE_NS * 4 || calls >= 1 << 20) {
      // The fastest of three runs: one stall of the shared machine must not set the batch size.
      ns = Math.min(ns, timeCalls(fn, calls), timeCalls(fn, calls));
      return Math.max(1, Math.ceil((MIN_SAMPLE_NS * calls) / Math.max(1, ns)));
    }
    calls *= 4;
  }
}

function timeCalls(fn: (i: number) => unknown, calls: number): number {
  const t0 = now();
  for (let i = 0; i < calls; i++) blackhole = fn(i);
  return Number(now() - t0);
}

/** Samples per call of timeChunk: short enough for the deadline to be checked often. */
const CHUNK = 256;

/**
 * The timed loop: samples [from, to) of `out`, each `batch` calls of `fn` from call index `call`;
 * returns the next call index. A function of its own, run for the warm-up as for the samples:
 * with the loop inside sampleCalls, each sampleCalls call began timing in the interpreter, until
 * V8 had compiled the loop on a helper thread and entered it (OSR: milliseconds later on a busy
 * machine, a few thousand samples), and the code left it by a deopt at the loop's end, so every
 * round's first samples carried the interpreter's clock reads (bench/indexer/tail-probe-suite.ts
 * with --trace-opt --trace-osr).
 */
function timeChunk(fn: (i: number) => unknown, out: Float64Array, from: number, to: number, batch: number, call: number, overheadNs: number): number {
  for (let n = from; n < to; n++) {
    const t0 = now();
    for (let b = 0; b < batch; b++) blackhole = fn(call++);
    const ns = Number(now() - t0);
    out[n] = Math.max(0, ns - overheadNs) / batch;
  }
  return call;
}

/**
 * Samples the per-call time of a synchronous function; `fn(i)` gets the call's index. The
 * warm-up goes through the timed loop too, for `warmup` calls and then until `warmupMs` have
 * passed, so that the loop and `fn` are compiled before the first sample (the compiler runs on a
 * helper thread, which a loaded 2-vCPU machine starts late).
 */
export function sampleCalls(fn: (i: number) => unknown, opts: SampleOptions): Sampled {
  const overheadNs = clockOverhead();
  const warmup = opts.warmup ?? 200;
  const scratch = new Float64Array(CHUNK);
  let call = 0;
  while (call < warmup) call = timeChunk(fn, scratch, 0, Math.min(CHUNK, warmup - call), 1, call, overheadNs);
  const batch = opts.batch === undefined || opts.batch === 'auto' ? autoBatch(fn) : Math.max(1, Math.floor(opts.batch));
  // Samples per chunk: up to CHUNK, about a millisecond's worth for slow calls (the deadline and
  // the warm-up's end are checked between chunks).
  const t0 = performance.now();
  call = timeChunk(fn, scratch, 0, 1, batch, call, overheadNs);
  const chunk = Math.max(1, Math.min(CHUNK, Math.floor(1 / Math.max(1e-6, performance.now() - t0))));
  const warmUntil = t0 + (opts.warmupMs ?? DEFAULT_WARMUP_MS);
  while (performance.now() < warmUntil) call = timeChunk(fn, scratch, 0, chunk, batch, call, overheadNs);
  const out = new Float64Array(opts.samples);
  const deadline = opts.maxMs === undefined ? Infinity : performance.now() + opts.maxMs;
  let n = 0;
  while (n < opts.samples) {
    const to = Math.min(opts.samples, n + chunk);
    call = timeChunk(fn, out, n, to, batch, call, overheadNs);
    n = to;
    if (performance.now() > deadline) break;
  }
  return { perCallNs: out.subarray(0, n), batch, overheadNs };
}

/** Samples the latency of an asynchronous call, one call at a time. */
export async function sampleAsync(fn: (i: number) => Promise<unknown>, opts: Omit<SampleOptions, 'batch'>): Promise<Sampled> {
  const overheadNs = clockOverhead();
  const warmup = opts.warmup ?? 20;
  for (let i = 0; i < warmup; i++) blackhole = await fn(i);
  const out = new Float64Array(opts.samples);
  const deadline = opts.maxMs === undefined ? Infinity : performance.now() + opts.maxMs;
  let n = 0;
  while (n < opts.samples) {
    const t0 = now();
    blackhole = await fn(warmup + n);
    out[n++] = Math.max(0, Number(now() - t0) - overheadNs);
    if (performance.now() > deadline) break;
  }
  return { perCallNs: out.subarray(0, n), batch: 1, overheadNs };
}

export interface RateOptions {
  /** Rounds per candidate; candidates take turns each round so they share the machine's noise. */
  rounds: number;
  /** Minimum time per candidate per round. */
  minMsPerRound: number;
  /** Calls before the first round. Default 3. */
  warmup?: number;
}

/** Lets the event loop turn: N-API external buffers (results of native calls) are freed only then. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Throughput of competing implementations, measured in alternation. Each candidate's function
 * does one unit of work and returns how much it did (bytes, events...); the result holds, per
 * candidate, one rate (work per second) per round. The event loop turns between turns, as it
 * does in a server, so memory the native calls hand to JavaScript is released as it would be.
 */
export async function interleavedRates(candidates: Record<string, () => number>, opts: RateOptions): Promise<Record<string, number[]>> {
  const names = Object.keys(candidates);
  const out: Record<string, number[]> = {};
  for (const name of names) {
    out[name] = [];
    for (let i = 0; i < (opts.warmup ?? 3); i++) blackhole = candidates[name]();
  }
  for (let r = 0; r < opts.rounds; r++) {
    for (const name of names) {
      await yieldToEventLoop();
      const fn = candidates[name];
      let work = 0;
      const t0 = now();
      let ns = 0;
      do {
        work += fn();
        ns = Number(now() - t0);
      } while (ns < opts.minMsPerRound * 1e6);
      out[name].push(work / (ns / 1e9));
    }
  }
  return out;
}

/** Milliseconds since `start` (a performance.now() reading). */
export function since(start: number): number {
  return performance.now() - start;
}
