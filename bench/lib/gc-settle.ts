// A forced full GC before a timed round, and the wait for the work it leaves behind.
//
// global.gc() returns when the main thread's pause ends, but V8's helper threads go on after a
// full GC (concurrent sweeping, freeing pages). In the indexer suite's process, which holds the
// reference indexer's ~270 MB heap, they used 240-280 ms of CPU during gc()'s pause and 10-40 ms
// more in the 20-100 ms after it (bench/indexer/tail-probe-suite.ts `threads`); findMatches timed
// in that window shared the 2-vCPU machine with them: in alternating rounds of one process,
// 462-2,000 of a round's first 2,000 calls were over 1 us slower right after gc(), 48-553 after
// the helpers had gone quiet. The measured code never ran right after a forced GC in a user's
// process, so the rounds start once the helpers are quiet.
import { readdirSync, readFileSync } from 'node:fs';

export interface SettleOptions {
  /** How often the helper threads' CPU time is read. Default 20 ms. */
  pollMs?: number;
  /** Quiet: the helpers used less than this much CPU over one poll. Default 1 ms. */
  quietNs?: number;
  /** Give up waiting after this long (the round then starts anyway). Default 2,000 ms. */
  maxMs?: number;
  /** Where the wait is fixed: without a helper CPU reading (no /proc). Default 200 ms. */
  fallbackMs?: number;
  /** CPU nanoseconds the process's other threads have used so far, or undefined when unknown. */
  helperCpuNs?: () => number | undefined;
}

export interface Settled {
  /** Milliseconds waited after gc() returned. */
  waitedMs: number;
  /** Whether the helpers went quiet (false: maxMs passed, or the wait was fixed). */
  quiet: boolean;
}

/** CPU time of this process's threads but the main one (Linux: /proc/self/task/<tid>/schedstat). */
export function helperThreadsCpuNs(): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  let ns = 0;
  for (const tid of tids) {
    if (Number(tid) === process.pid) continue;
    try {
      ns += Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended since the listing: its time no longer counts.
    }
  }
  return ns;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs a full GC (when exposed) and waits until V8's helper threads have finished after it. */
export async function gcAndSettle(opts: SettleOptions = {}): Promise<Settled> {
  const pollMs = opts.pollMs ?? 20;
  const quietNs = opts.quietNs ?? 1e6;
  const maxMs = opts.maxMs ?? 2_000;
  const read = opts.helperCpuNs ?? helperThreadsCpuNs;
  (globalThis as { gc?: () => void }).gc?.();
  const t0 = performance.now();
  let prev = read();
  if (prev === undefined) {
    await sleep(opts.fallbackMs ?? 200);
    return { waitedMs: performance.now() - t0, quiet: false };
  }
  for (;;) {
    await sleep(pollMs);
    const now = read();
    const waitedMs = performance.now() - t0;
    if (now !== undefined && now - prev < quietNs) return { waitedMs, quiet: true };
    if (waitedMs >= maxMs) return { waitedMs, quiet: false };
    prev = now ?? prev;
  }
}
