// Probe: the indexer suite's latency measurement as it runs (bench/suites/indexer.ts: the same
// index, the reference indexer's heap beside it, gc() then sampleCalls per round), with its
// per-call samples taken apart: the calls right after the forced GC against the rest, and the
// spacing of the slow calls. Run: node --expose-gc --import tsx bench/indexer/tail-probe-suite.ts
// [noref: without the reference's heap] [threads: the helper threads' CPU after gc() instead];
// SETTLE_MS=0,auto (what each round waits after gc(), in turn), ROUNDS=6.
import { readFileSync } from 'node:fs';
import { gcAndSettle, helperThreadsCpuNs } from '../lib/gc-settle.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { ReferenceIndexer } from '../reference/indexer.js';
import { sampleCalls } from '../lib/timer.js';
import { BLOCK_SIZE, documentCount, FULL_DOCS_PER_WORKER, queryHashes, queryTokens, storedEvents } from './workload.js';
import { decodeOrThrow, storedPayloads } from './payloads.js';

const stored = storedPayloads(storedEvents(FULL_DOCS_PER_WORKER));
const index = new KvIndexer({ blockSize: BLOCK_SIZE });
for (const p of stored) index.applyEventBatch(p.worker, 0, p.bytes);
const reference = new ReferenceIndexer(BLOCK_SIZE);
if (!process.argv.includes('noref')) {
  for (const p of stored)
    for (const e of decodeOrThrow(p.bytes).events) if (e.kind === 'stored') reference.applyStored(p.worker, 0, e.parentHash, e.blockHashes, e.tokenIds);
}
const qs = queryHashes(queryTokens(documentCount(FULL_DOCS_PER_WORKER)));
const gc = () => (globalThis as { gc?: () => void }).gc?.();
// Per round, in turn: a fixed wait after gc() in ms, or 'auto' (gcAndSettle: until V8's helpers are quiet).
const settles = (process.env.SETTLE_MS ?? '0').split(',');
const ROUNDS = Number(process.env.ROUNDS ?? 6);

if (process.argv.includes('threads')) {
  // What the other threads do after a forced full GC: their CPU time at moments after it.
  const cpuNs = () => helperThreadsCpuNs() ?? NaN; // NaN off Linux: nothing to read
  for (let round = 0; round < 4; round++) {
    await new Promise((r) => setTimeout(r, 1500));
    const c0 = cpuNs();
    const t0 = performance.now();
    gc();
    const pause = performance.now() - t0;
    const marks: string[] = [];
    for (const at of [5, 20, 50, 100, 200, 400, 1000]) {
      await new Promise((r) => setTimeout(r, at - (performance.now() - t0 - pause)));
      marks.push(`+${at} ms ${((cpuNs() - c0) / 1e6).toFixed(1)}`);
    }
    console.log(`gc() paused the main thread ${pause.toFixed(1)} ms; helper threads' CPU ms since: ${marks.join(', ')}`);
  }
  process.exit(0);
}

const sorted = (xs: ArrayLike<number>) => Float64Array.from(xs).sort();
const pct = (s: Float64Array, p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
const all = new Map<string, number[]>(settles.map((s) => [s, []]));
const rest = new Map<string, number[]>(settles.map((s) => [s, []]));
const HEAD = 2000;
for (let round = 0; round < ROUNDS; round++) {
  const settle = settles[round % settles.length];
  if (settle === 'auto') await gcAndSettle();
  else {
    gc();
    await new Promise((r) => setTimeout(r, Number(settle)));
  }
  if (process.env.MARK_ROUNDS) console.log(`round ${round} starts`); // beside --trace-opt / --trace-deopt output
  const ns = sampleCalls((i) => index.findMatches(qs[i % qs.length]), { samples: 15_000, warmup: 500, batch: 1 }).perCallNs;
  const med = pct(sorted(ns), 0.5);
  let headSlow = 0;
  let tailSlow = 0;
  const slow: number[] = [];
  for (let i = 0; i < ns.length; i++) {
    if (ns[i] > med + 1000) {
      if (i < HEAD) headSlow++;
      else tailSlow++;
      slow.push(i);
    }
    all.get(settle)!.push(ns[i]);
    if (i >= HEAD) rest.get(settle)!.push(ns[i]);
  }
  const h = new Map<number, number>();
  for (let k = 1; k < slow.length; k++) h.set(slow[k] - slow[k - 1], (h.get(slow[k] - slow[k - 1]) ?? 0) + 1);
  console.log(
    `round ${round} (settle ${settle}): p50 ${med.toFixed(0)} p99 ${pct(sorted(ns), 0.99).toFixed(0)} ns; calls > p50 + 1 us: first ${HEAD} ${headSlow}, other ${ns.length - HEAD} ${tailSlow}; gaps ${[
      ...h,
    ]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([k, v]) => `${k}:${v}`)
      .join(' ')}`,
  );
  gc();
  if (!process.argv.includes('noref')) sampleCalls((i) => reference.findMatches(qs[i % qs.length]), { samples: 2000, warmup: 500, batch: 1 });
}
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
for (const settle of settles) {
  const a = sorted(all.get(settle)!);
  console.log(
    `${process.execArgv.join(' ')} settle ${settle}, load ${load}: all p50 ${pct(a, 0.5).toFixed(0)} p99 ${pct(a, 0.99).toFixed(0)}; without each round's first ${HEAD} calls p99 ${pct(sorted(rest.get(settle)!), 0.99).toFixed(0)} ns`,
  );
}
