// The router queue under overload (issue 15): the synthetic Mooncake trace replayed offline in
// virtual time through the live router (4 aggregated workers, policy kv, a seeded 20% of the
// requests at priority 1) at an arrival rate where kv's own TTFT has grown several-fold, with
// nothing in front of the engines, with refusals above a cap of queued prefill (429, the
// server's maxQueuedPrefillTokens), and with the router queue (fcfs unbounded; wspt bounded by
// queued tokens). Each request's TTFT is compared with its TTFT on the unloaded fleet (the same
// trace at a quarter of its rate); a refused request counts as not served in time.
import { fileURLToPath } from 'node:url';
import type { QueueSettings } from '../../src/routing/queue/admission-queue.js';
import type { RoutingConfig } from '../../src/core/routing-core.js';
import { summarizeRun, type PolicySummary } from '../../src/sim/replay/summary.js';
import { loadTrace, type TraceRequest } from '../../src/sim/replay/trace.js';
import { runVirtualFleet } from '../../src/sim/replay/virtual-fleet.js';
import { cdfChart } from '../lib/svg.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';

const TRACE = fileURLToPath(new URL('../../traces/synthetic_trace.jsonl', import.meta.url));
const WORKERS = 4;
const ENGINE = { blockSize: 16, kvBlocks: 65_536 };
const HIGH_SHARE = 0.2;
/** kv's TTFT p90 at x3.17 is 7x its x1 figure on this trace (the replay suite's sweep). */
const OVERLOAD = 3.17;
const UNLOADED = 0.25;
/** The engines' max_num_batched_tokens (the simulated engine's default): the queue's unit. */
const BATCH = 8192;
/** A request is served in time when its TTFT is within this multiple of its unloaded TTFT. */
const IN_TIME = 5;

interface Setup {
  name: string;
  routerQueue?: Partial<QueueSettings>;
  routing?: Partial<RoutingConfig>;
}

const SETUPS: readonly Setup[] = [
  { name: 'no protection' },
  // The same budget as the queue's threshold: 2 batches per worker.
  { name: 'refuse above 2 x 8192 per worker', routing: { maxQueuedPrefillTokens: 2 * BATCH * WORKERS } },
  { name: 'queue fcfs, threshold 2', routerQueue: { threshold: 2, policy: 'fcfs' } },
  { name: 'queue wspt, threshold 2, max 262144 queued tokens', routerQueue: { threshold: 2, policy: 'wspt', maxTokens: 262_144 } },
];

interface Outcome {
  setup: Setup;
  summary: PolicySummary;
  ttfts: number[];
  inTime: number;
  highP90: number;
  lowP90: number;
}

async function replay(trace: TraceRequest[], scale: number, setup: Setup, ctx: BenchContext) {
  ctx.progress(`${setup.name} x${scale}`);
  const started = performance.now();
  const run = await runVirtualFleet(trace, {
    workers: WORKERS,
    policy: 'kv',
    engine: ENGINE,
    seed: 0,
    arrivalScale: scale,
    highPriorityShare: HIGH_SHARE,
    routerQueue: setup.routerQueue,
    routing: setup.routing,
    onProgress: (done, total) => ctx.progress(`${setup.name} x${scale}: ${done}/${total}`),
  });
  return { run, summary: summarizeRun(run, performance.now() - started) };
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const trace = (await loadTrace(TRACE)).slice(0, ctx.quick ? 600 : Infinity);
  const base = (await replay(trace, UNLOADED, { name: 'unloaded' }, ctx)).run.records.map((r) => r.firstTokenMs - r.arrivalMs);
  const outcomes: Outcome[] = [];
  for (const setup of SETUPS) {
    const { run: r, summary } = await replay(trace, OVERLOAD, setup, ctx);
    const ttft = r.records.map((rec) => (rec.refused ? Infinity : rec.firstTokenMs - rec.arrivalMs));
    const p90Of = (priority: number) => summary.ttft_p90_ms_by_priority?.[String(priority)] ?? summary.ttft_ms.p90;
    outcomes.push({
      setup,
      summary,
      ttfts: ttft.filter(Number.isFinite),
      inTime: ttft.filter((t, i) => t <= IN_TIME * base[i]).length / ttft.length,
      highP90: p90Of(1),
      lowP90: p90Of(0),
    });
  }
  const [none, refuse, fcfs, wspt] = outcomes;
  const figures: Figure[] = [];
  for (const q of [fcfs, wspt]) {
    figures.push({
      name: `share of requests served within ${IN_TIME}x their unloaded TTFT, ${q.setup.name}, over refusing`,
      value: q.inTime / refuse.inTime,
      unit: 'x',
      better: 'higher',
      target: { op: '>=', value: 1.5 },
      headline: q === wspt,
      note: `${pct(q.inTime)} against ${pct(refuse.inTime)} when refusing (${refuse.summary.refused} refused) and ${pct(none.inTime)} with no protection`,
    });
    figures.push({
      name: `TTFT p90 of priority 1 over priority 0, ${q.setup.name}`,
      value: q.highP90 / q.lowP90,
      unit: 'x',
      target: { op: '<=', value: 0.5 },
      headline: q === fcfs,
      note: `${ms(q.highP90)} against ${ms(q.lowP90)}`,
    });
    figures.push({
      name: `TTFT p90, ${q.setup.name}`,
      value: q.summary.ttft_ms.p90,
      unit: 'ms',
      reference: { name: 'no protection', value: none.summary.ttft_ms.p90 },
    });
  }

  const rows = outcomes.map(
    (o) =>
      `| ${o.setup.name} | ${o.summary.completed} | ${o.summary.refused} | ${pct(o.inTime)} | ${ms(o.summary.ttft_ms.p50)} | ${ms(o.summary.ttft_ms.p90)} | ${ms(o.summary.ttft_ms.p99)} | ${ms(o.summary.ttft_ms.mean)} | ${ms(o.highP90)} | ${ms(o.lowP90)} |`,
  );
  const markdown = [
    `${trace.length} requests of synthetic_trace.jsonl, ${WORKERS} aggregated workers of ${ENGINE.kvBlocks} blocks of ${ENGINE.blockSize} tokens, policy kv, arrivals x${OVERLOAD}; ${pct(HIGH_SHARE)} of the requests (seeded) at priority 1. "In time": TTFT within ${IN_TIME}x the same request's TTFT at x${UNLOADED}; refused requests count as not in time. TTFT percentiles are over the served requests.`,
    '',
    '| setup | served | refused | in time | TTFT p50 | TTFT p90 | TTFT p99 | TTFT mean | p90 priority 1 | p90 priority 0 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n');
  return {
    figures,
    sections: [{ title: 'Overload, synthetic trace', markdown }],
    charts: [
      {
        name: 'ttft-cdf',
        title: 'TTFT under overload, by setup',
        svg: cdfChart({ title: `TTFT of served requests at x${OVERLOAD}, synthetic trace`, xLabel: 'time to first token (ms)', logX: true, series: outcomes.map((o) => ({ name: o.setup.name, values: o.ttfts })) }),
      },
    ],
    data: outcomes.map((o) => ({ setup: o.setup, in_time: o.inTime, summary: o.summary })),
  };
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '-');

export const suite: BenchSuite = { name: 'overload', title: 'Router queue under overload', order: 61, run };
