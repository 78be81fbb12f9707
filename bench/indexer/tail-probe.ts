// Probe: where does the public findMatches' p99 come from? Builds the indexer suite's workload
// (64 workers, ~1.04M blocks), then times single calls of several variants in rotating rounds,
// recording per call its time, whether a GC ran across it and the process's minor page faults
// per batch. Run: node --expose-gc --import tsx bench/indexer/tail-probe.ts [quick] (plus any V8 flag).
import { readFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { KvIndexer } from '../../src/core/indexer.js';
import { fast } from '../../src/core/fast-calls.js';
import { BLOCK_SIZE, documentCount, FULL_DOCS_PER_WORKER, QUICK_DOCS_PER_WORKER, queryHashes, queryTokens, storedEvents } from './workload.js';
import { storedPayloads } from './payloads.js';

const quick = process.argv.includes('quick');
const perWorker = quick ? QUICK_DOCS_PER_WORKER : FULL_DOCS_PER_WORKER;
const index = new KvIndexer({ blockSize: BLOCK_SIZE });
for (const p of storedPayloads(storedEvents(perWorker))) index.applyEventBatch(p.worker, 0, p.bytes);
const qs = queryHashes(queryTokens(documentCount(perWorker)));
const handle = (index as unknown as { handle: number }).handle;

let sink: unknown;
const out = new Int32Array(4 * 64);
const f64 = new Float64Array(3 * 64);

const variants: Record<string, (q: BigUint64Array) => unknown> = {
  public: (q) => index.findMatches(q),
  into: (q) => index.findMatchesInto(q, f64),
  bare: (q) => fast.findMatchesFast(handle, q, out),
  // Twice the allocation per timed call: if the slow calls are V8's young-generation page
  // crossings, they come twice as often (every ~35 calls instead of ~70).
  twice: (q) => index.findMatches(q) && index.findMatches(q),
};

const gcs: { start: number; end: number; kind: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    gcs.push({ start: e.startTime, end: e.startTime + e.duration, kind: (e as unknown as { detail: { kind: number } }).detail.kind });
}).observe({ entryTypes: ['gc'] });

function minflt(): number {
  return Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[7]);
}

/** V8's page size (the young generation's pages hold a little less: their header). */
const YOUNG_PAGE_BYTES = 256 * 1024;
const bytesPerCall: Record<string, number> = {};
const CALLS = quick ? 20_000 : 60_000;
const BATCH = 1000;
interface Round {
  name: string;
  ns: Float64Array;
  at: Float64Array;
  faults: number;
}

/** Times calls [from, to) into ns / at: a function of its own, compiled during the warm-up (a loop
 * inside round() would start each round in the interpreter, as sampleCalls once did). */
function timeCalls(fn: (q: BigUint64Array) => unknown, ns: Float64Array, at: Float64Array, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const q = qs[i % qs.length];
    const t0 = performance.now();
    sink = fn(q);
    const t1 = performance.now();
    ns[i] = (t1 - t0) * 1e6;
    at[i] = t0;
  }
}

function round(name: string): Round {
  const fn = variants[name];
  const ns = new Float64Array(CALLS);
  const at = new Float64Array(CALLS);
  const warmUntil = performance.now() + 50;
  while (performance.now() < warmUntil) timeCalls(fn, ns, at, 0, 256);
  let faults = 0;
  for (let b = 0; b < CALLS; b += BATCH) {
    const f0 = minflt();
    timeCalls(fn, ns, at, b, b + BATCH);
    faults += minflt() - f0;
  }
  return { name, ns, at, faults };
}

const pct = (xs: Float64Array, p: number) => {
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

/** Per query: its fastest call and its median, to tell the query mix from noise. */
function perQuery(name: string, ns: Float64Array): void {
  const mins: number[] = [];
  const meds: number[] = [];
  for (let q = 0; q < qs.length; q++) {
    const xs: number[] = [];
    for (let i = q; i < ns.length; i += qs.length) xs.push(ns[i]);
    xs.sort((a, b) => a - b);
    mins.push(xs[0]);
    meds.push(xs[xs.length >> 1]);
  }
  const s = (a: number[]) => [...a].sort((x, y) => x - y);
  const m = s(mins),
    d = s(meds);
  const q = (a: number[], p: number) => a[Math.floor(p * (a.length - 1))].toFixed(0);
  console.log(
    `${name}: per-query min: p0 ${q(m, 0)} p50 ${q(m, 0.5)} p90 ${q(m, 0.9)} max ${q(m, 1)};  per-query median: p0 ${q(d, 0)} p50 ${q(d, 0.5)} p90 ${q(d, 0.9)} max ${q(d, 1)}`,
  );
  const byKind = [0, 1, 2, 3].map((k) => s(meds.filter((_, i) => i % 4 === k)));
  console.log(
    `  median by query kind (q%4): ${byKind.map((a) => q(a, 0.5)).join(' / ')}; matches ${qs
      .slice(0, 4)
      .map((x) =>
        index
          .findMatches(x)
          .map((m) => m.blocks)
          .slice(0, 3)
          .join(','),
      )
      .join(' | ')}`,
  );
}

/** The slow calls (over 1.8x their query's median) and the calls between them. */
function gaps(name: string, ns: Float64Array, inGc: Uint8Array, pageCalls: number): void {
  const meds: number[] = [];
  for (let q = 0; q < qs.length; q++) {
    const xs: number[] = [];
    for (let i = q; i < ns.length; i += qs.length) xs.push(ns[i]);
    xs.sort((a, b) => a - b);
    meds.push(xs[xs.length >> 1]);
  }
  const slow: number[] = [];
  for (let i = 0; i < ns.length; i++) if (!inGc[i] && ns[i] > 1.8 * meds[i % qs.length]) slow.push(i);
  const g = slow.slice(1).map((x, i) => x - slow[i]);
  const hist = new Map<number, number>();
  for (const x of g) hist.set(x, (hist.get(x) ?? 0) + 1);
  const top = [...hist].sort((a, b) => b[1] - a[1]).slice(0, 12);
  console.log(`${name}: ${slow.length} slow calls of ${ns.length}; commonest gaps (calls: times) ${top.map(([k, v]) => `${k}:${v}`).join(' ')}`);
  const per = new Array(Math.ceil(ns.length / 1000)).fill(0);
  for (const i of slow) per[Math.floor(i / 1000)]++;
  // The slow calls one young-generation page after another (bytes per call / ~254 KB apart).
  const paged = slow.filter((x, k) => k > 0 && Math.abs(x - slow[k - 1] - pageCalls) <= 2);
  const extra = paged.map((i) => ns[i] - meds[i % qs.length]).sort((a, b) => a - b);
  if (extra.length > 0)
    console.log(
      `  ${paged.length} slow calls one page (~${pageCalls.toFixed(1)} calls) after another: extra ns p25 ${extra[extra.length >> 2].toFixed(0)} p50 ${extra[extra.length >> 1].toFixed(0)} p75 ${extra[(3 * extra.length) >> 2].toFixed(0)}`,
    );
  console.log(`  slow calls per 1000: ${per.join(' ')}`);
  console.log(`  first slow calls: ${slow.slice(0, 30).join(' ')}`);
  console.log(
    `  their extra ns: ${slow
      .slice(0, 30)
      .map((i) => (ns[i] - meds[i % qs.length]).toFixed(0))
      .join(' ')}`,
  );
}

async function main(): Promise<void> {
  const names = Object.keys(variants);
  {
    const v8 = await import('node:v8');
    const used = () => v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.space_used_size;
    for (const n of names) {
      for (let i = 0; i < 3000; i++) sink = variants[n](qs[i % qs.length]); // optimised code's allocation only
      (globalThis as { gc?: () => void }).gc?.();
      const u0 = used();
      for (let i = 0; i < 100; i++) sink = variants[n](qs[i % qs.length]);
      bytesPerCall[n] = (used() - u0) / 100;
      console.log(
        `${n}: ~${((used() - u0) / 100).toFixed(0)} bytes allocated per call; new space ${v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')!.space_size} bytes`,
      );
    }
  }
  const rows: Record<string, { p50: number[]; p99: number[]; p99NoGc: number[]; gcCalls: number[]; faults: number[]; gcCount: number[] }> = {};
  for (const n of names) rows[n] = { p50: [], p99: [], p99NoGc: [], gcCalls: [], faults: [], gcCount: [] };
  const rounds = quick ? 2 : 4;
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length];
      (globalThis as { gc?: () => void }).gc?.();
      await new Promise((res) => setImmediate(res));
      gcs.length = 0;
      const res = round(name);
      await new Promise((res) => setTimeout(res, 20)); // the observer's entries arrive asynchronously
      const inGc = new Uint8Array(CALLS);
      let g = 0;
      for (let i = 0; i < CALLS; i++) {
        const t0 = res.at[i];
        const t1 = t0 + res.ns[i] / 1e6;
        for (const e of gcs) if (e.start < t1 && e.end > t0) inGc[i] = 1;
        g += inGc[i];
      }
      const noGc = res.ns.filter((_, i) => !inGc[i]);
      const row = rows[name];
      row.p50.push(pct(res.ns, 0.5));
      row.p99.push(pct(res.ns, 0.99));
      row.p99NoGc.push(pct(noGc, 0.99));
      row.gcCalls.push(g);
      row.faults.push(res.faults);
      row.gcCount.push(gcs.filter((e) => e.start >= res.at[0]).length);
      if (process.env.PERQ && r === rounds - 1) perQuery(name, res.ns);
      if (process.env.GAPS && r === rounds - 1) gaps(name, res.ns, inGc, YOUNG_PAGE_BYTES / bytesPerCall[name]);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`flags: ${process.execArgv.join(' ')}  load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  for (const n of names) {
    const r = rows[n];
    console.log(
      `${n.padEnd(8)} p50 ${med(r.p50).toFixed(0)} ns  p99 ${med(r.p99).toFixed(0)} ns  p99 w/o GC calls ${med(r.p99NoGc).toFixed(0)} ns  ` +
        `calls in a GC ${med(r.gcCalls)}/${CALLS}  GCs ${med(r.gcCount)}  minflt ${med(r.faults)} per ${CALLS} calls   [p99 rounds ${r.p99.map((x) => x.toFixed(0)).join(' ')}]`,
    );
  }
  void sink;
}

await main();
