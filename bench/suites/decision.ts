// The routing decision: one RoutingCore.route() call from JavaScript (hash + match + select +
// book, one native call) against 64 workers whose KV events indexed 1M blocks (35 documents of
// 8k tokens per worker), for 1k, 8k and 64k-token prompts; and decisions per second on one core.
// A steady 256 requests stay booked (each decision frees the one booked 256 decisions before it,
// outside the timed call), so the load book is as busy as in a live router.
// Target (issue 14, was 20 us in issue 3): p99 at most 15 us at 8k tokens.
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore, type RoutingDecision } from '../../src/core/routing-core.js';
import { BLOCK_SIZE, DOC_BLOCKS, documentTokens, fillTokens, SYSTEM_PROMPTS, WORKERS } from '../indexer/workload.js';
import { formatNumber } from '../lib/format.js';
import { summarize, type Summary } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Chart, Figure, SuiteResult } from '../lib/suite.js';
import { cdfChart } from '../lib/svg.js';
import { clockOverhead } from '../lib/timer.js';

// Documents of 8k tokens sharing 16 system prompts of 1k tokens (bench/indexer/workload.ts).
const ACTIVE = 256; // bookings kept live
const FRESH_TAIL = 256; // new tokens a follow-up request adds to a cached document

interface Sizes {
  docsPerWorker: number;
  samples: Record<number, number>;
  throughputMs: number;
}

const FULL: Sizes = { docsPerWorker: 35, samples: { 1024: 50_000, 8192: 20_000, 65536: 2_000 }, throughputMs: 1_000 };
const QUICK: Sizes = { docsPerWorker: 8, samples: { 1024: 5_000, 8192: 5_000, 65536: 300 }, throughputMs: 300 };

/** Every worker reports, through KV events, the documents it holds. */
function buildIndex(docsPerWorker: number): KvIndexer {
  const indexer = new KvIndexer({ blockSize: BLOCK_SIZE });
  let engineHash = 1n;
  for (let w = 0; w < WORKERS; w++) {
    for (let j = 0; j < docsPerWorker; j++) {
      const hashes = new BigUint64Array(DOC_BLOCKS);
      for (let b = 0; b < DOC_BLOCKS; b++) hashes[b] = engineHash++;
      if (!indexer.applyStored(w, 0, null, hashes, documentTokens(w * docsPerWorker + j))) {
        throw new Error(`the index refused document ${w * docsPerWorker + j}`);
      }
    }
  }
  return indexer;
}

/** Follow-up requests: a cached document's prefix (as long as fits) then fresh tokens. */
function prompts(tokens: number, count: number, docs: number): Uint32Array[] {
  return Array.from({ length: count }, (_, p) => {
    const t = new Uint32Array(tokens);
    const doc = documentTokens((p * 7919) % docs);
    const cached = Math.min(doc.length, Math.max(0, tokens - FRESH_TAIL));
    t.set(doc.subarray(0, cached));
    fillTokens(t, 50_000_000 + p, cached);
    return t;
  });
}

interface Measured {
  tokens: number;
  latencyUs: Float64Array;
  summary: Summary;
  native: { hash: number; match: number; select: number; total: number };
  overlapBlocks: number;
}

function measure(core: RoutingCore, inputs: Uint32Array[], samples: number, tag: string): Measured {
  const overheadNs = clockOverhead();
  const latency = new Float64Array(samples);
  const phases = { hash: new Float64Array(samples), match: new Float64Array(samples), select: new Float64Array(samples), total: new Float64Array(samples) };
  let overlap = 0;
  const warmup = Math.min(500, samples);
  let next = 0;
  const step = (record: number) => {
    const id = `${tag}-${next}`;
    const tokens = inputs[next % inputs.length];
    const t0 = process.hrtime.bigint();
    const d: RoutingDecision = core.route(tokens, { requestId: id });
    const ns = Number(process.hrtime.bigint() - t0);
    if (next >= ACTIVE) core.free(`${tag}-${next - ACTIVE}`);
    next++;
    if (record < 0) return;
    latency[record] = Math.max(0, ns - overheadNs) / 1000;
    phases.hash[record] = d.timingsUs.hash;
    phases.match[record] = d.timingsUs.match;
    phases.select[record] = d.timingsUs.select;
    phases.total[record] = d.timingsUs.total;
    overlap += d.overlapBlocks;
  };
  for (let i = 0; i < warmup; i++) step(-1);
  (globalThis as { gc?: () => void }).gc?.();
  for (let i = 0; i < samples; i++) step(i);
  for (let k = Math.max(0, next - ACTIVE); k < next; k++) core.free(`${tag}-${k}`);
  return {
    tokens: inputs[0].length,
    latencyUs: latency,
    summary: summarize(latency),
    native: {
      hash: summarize(phases.hash).p50,
      match: summarize(phases.match).p50,
      select: summarize(phases.select).p50,
      total: summarize(phases.total).p50,
    },
    overlapBlocks: overlap / samples,
  };
}

/** Closed loop on one core: route + free pairs per second (the steady state of a router). */
function throughput(core: RoutingCore, inputs: Uint32Array[], ms: number, tag: string): number {
  let n = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let k = 0; k < 64; k++, n++) {
      core.route(inputs[n % inputs.length], { requestId: `${tag}-${n}` });
      if (n >= ACTIVE) core.free(`${tag}-${n - ACTIVE}`);
    }
    elapsed = performance.now() - t0;
  }
  for (let k = Math.max(0, n - ACTIVE); k < n; k++) core.free(`${tag}-${k}`);
  return (n / elapsed) * 1000;
}

const label = (tokens: number) => `${tokens / 1024}k`;

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const sizes = ctx.quick ? QUICK : FULL;
  ctx.progress(`indexing ${WORKERS} workers x ${sizes.docsPerWorker} documents of ${DOC_BLOCKS} blocks`);
  const indexer = buildIndex(sizes.docsPerWorker);
  const blocks = indexer.stats().blocks;
  const docs = WORKERS * sizes.docsPerWorker;
  const core = new RoutingCore(indexer, { blockSize: BLOCK_SIZE, seed: 1 });
  core.setWorkers(Array.from({ length: WORKERS }, (_, w) => ({ worker: w, kvCapacityBlocks: 16_384 })));
  const setting = `${WORKERS} workers, ${formatNumber(blocks)} indexed blocks`;

  const results: Measured[] = [];
  for (const tokens of [1024, 8192, 65536]) {
    ctx.progress(`decisions for ${label(tokens)}-token prompts`);
    const inputs = prompts(tokens, tokens > 10_000 ? 64 : 256, docs);
    results.push(measure(core, inputs, sizes.samples[tokens], `d${tokens}`));
  }
  ctx.progress('decisions per second');
  const rate1k = throughput(core, prompts(1024, 256, docs), sizes.throughputMs, 't1k');
  const rate8k = throughput(core, prompts(8192, 256, docs), sizes.throughputMs, 't8k');
  const totals = core.totals();
  if (totals.requests !== 0 || totals.prefillTokens !== 0 || totals.decodeBlocks !== 0) {
    throw new Error(`bookings leaked: ${JSON.stringify(totals)}`);
  }

  const figures: Figure[] = [];
  for (const r of results) {
    const at8k = r.tokens === 8192;
    figures.push({ name: `decision p50, ${label(r.tokens)}-token prompt, ${setting}`, value: r.summary.p50, unit: 'us', better: 'lower' });
    figures.push({
      name: `decision p99, ${label(r.tokens)}-token prompt, ${setting}`,
      value: r.summary.p99,
      unit: 'us',
      better: 'lower',
      ...(at8k ? { target: { op: '<=' as const, value: 15 }, headline: true } : {}),
    });
  }
  figures.push({ name: 'decisions per second on one core (route + free), 1k-token prompts', value: rate1k, unit: 'decisions/s', better: 'higher' });
  figures.push({
    name: 'decisions per second on one core (route + free), 8k-token prompts',
    value: rate8k,
    unit: 'decisions/s',
    better: 'higher',
    headline: true,
  });

  const rows = results.map(
    (r) =>
      `| ${label(r.tokens)} | ${r.summary.n} | ${r.overlapBlocks.toFixed(0)} | ${fmt(r.summary.p50)} | ${fmt(r.summary.p90)} | ${fmt(r.summary.p99)} | ` +
      `${fmt(r.native.hash)} | ${fmt(r.native.match)} | ${fmt(r.native.select)} | ${fmt(r.native.total)} |`,
  );
  const markdown = [
    `One \`RoutingCore.route()\` call from JavaScript, policy kv, ${setting} (documents of ${DOC_BLOCKS} blocks`,
    `sharing ${SYSTEM_PROMPTS} system prompts); each request follows up a cached document with ${FRESH_TAIL} new tokens;`,
    `${ACTIVE} requests stay booked. Latency from JavaScript (clock cost subtracted); the phase split is`,
    'measured inside the native call (medians).',
    '',
    '| prompt | samples | avg overlap blocks | p50 us | p90 us | p99 us | hash us | match us | select + book us | native total us |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Decisions per second on one core (route + free, closed loop): ${formatNumber(rate1k)} at 1k tokens, ${formatNumber(rate8k)} at 8k tokens.`,
  ].join('\n');

  const charts: Chart[] = [
    {
      name: 'decision-latency',
      title: 'Routing decision latency from JavaScript',
      svg: cdfChart({
        title: `One routing decision (${setting})`,
        xLabel: 'microseconds',
        logX: true,
        series: results.map((r) => ({ name: `${label(r.tokens)}-token prompt`, values: r.latencyUs })),
      }),
    },
  ];
  return {
    figures,
    sections: [{ title: 'Routing decision (hash + match + select + book)', markdown }],
    charts,
    data: {
      blocks,
      workers: WORKERS,
      results: results.map((r) => ({ tokens: r.tokens, summary: r.summary, native_p50_us: r.native })),
      decisions_per_s: { '1k': rate1k, '8k': rate8k },
    },
  };
}

function fmt(v: number): string {
  return v.toFixed(v < 10 ? 2 : 1);
}

export const suite: BenchSuite = { name: 'decision', title: 'Routing decisions', order: 20, run };
