// The router queue under overload (issue 15): the synthetic Mooncake trace replayed offline in
// virtual time through the live router (4 aggregated workers; policy kv, and ttft, serve's
// default; a seeded 20% of the requests at priority 1) at the issue's load: "the first arrival rate where round robin
// saturates", measured here on the replay suite's sweep (x1, x1.26, x1.59 ... with its
// definition of saturated: TTFT p90 past 10x its p90 at x1, or any refusal).
//
// "Refusing" is kvroute without the queue. As a user gets it, kvroute refuses nothing: its 429
// path (maxQueuedPrefillTokens, a cap on the pool's booked prefill tokens) has no default, so
// the default is the "no protection" row. With a cap configured it refuses; caps of 1, 2, 4 and 8
// batches of 8192 tokens per worker are measured and the best of them is the strict baseline.
// Each request's TTFT is compared with its TTFT on the unloaded fleet (the same trace at a quarter
// of its rate); a refused request counts as not served in time.
import { fileURLToPath } from 'node:url';
import type { QueueSettings } from '../../src/routing/queue/admission-queue.js';
import type { RoutingConfig } from '../../src/core/routing-core.js';
import { SATURATION_TTFT_GROWTH, sweepLoads } from '../../src/sim/replay/replay.js';
import { summarizeRun, type PolicySummary } from '../../src/sim/replay/summary.js';
import { loadTrace, type TraceRequest } from '../../src/sim/replay/trace.js';
import { runVirtualFleet } from '../../src/sim/replay/virtual-fleet.js';
import { cdfChart } from '../lib/svg.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';

const TRACE = fileURLToPath(new URL('../../traces/synthetic_trace.jsonl', import.meta.url));
const WORKERS = 4;
const ENGINE = { blockSize: 16, kvBlocks: 65_536 };
const HIGH_SHARE = 0.2;
/** The round robin sweep's loads (the replay suite's), searched for the first saturated one. */
const SWEEP = sweepLoads(1, 8);
const UNLOADED = 0.25;
/** The engines' max_num_batched_tokens (the simulated engine's default): the queue's unit. */
const BATCH = 8192;
/** A request is served in time when its TTFT is within this multiple of its unloaded TTFT. */
const IN_TIME = 5;

interface Setup {
  name: string;
  /** engine: no router queue, the engines ordering their queues by the forwarded priority. */
  kind: 'none' | 'refuse' | 'queue' | 'engine';
  routerQueue?: Partial<QueueSettings>;
  routing?: Partial<RoutingConfig>;
  /** The router forwards each request's priority and the engines schedule by it (vLLM --scheduling-policy priority). */
  enginePriority?: boolean;
}

const REFUSAL_CAPS = [1, 2, 4, 8] as const;

const SETUPS: readonly Setup[] = [
  { name: "no protection (kvroute's default: nothing refused)", kind: 'none' },
  ...REFUSAL_CAPS.map(
    (k): Setup => ({ name: `refuse above ${k} x 8192 per worker`, kind: 'refuse', routing: { maxQueuedPrefillTokens: k * BATCH * WORKERS } }),
  ),
  { name: 'queue fcfs, threshold 2', kind: 'queue', routerQueue: { threshold: 2, policy: 'fcfs' } },
  // Issue 15's priority target with ttft: a lower threshold keeps more of the wait in the router,
  // where the class counts; forwarding the class lets the engines order their own queues by it.
  { name: 'no router queue, engines schedule by priority', kind: 'engine', enginePriority: true },
  { name: 'queue fcfs, threshold 0.5', kind: 'queue', routerQueue: { threshold: 0.5, policy: 'fcfs' } },
  { name: 'queue fcfs, threshold 2, engines schedule by priority', kind: 'queue', routerQueue: { threshold: 2, policy: 'fcfs' }, enginePriority: true },
  { name: 'queue wspt, threshold 2, max 262144 queued tokens', kind: 'queue', routerQueue: { threshold: 2, policy: 'wspt', maxTokens: 262_144 } },
  // The wait limit sheds what would be served late (and a long prompt wspt would hold back); the
  // tighter bounds keep what waits short.
  {
    name: 'queue wspt, threshold 1, max 32768 queued tokens, max wait 200 ms',
    kind: 'queue',
    routerQueue: { threshold: 1, policy: 'wspt', maxTokens: 32_768, maxWaitMs: 200 },
  },
];

interface Outcome {
  setup: Setup;
  summary: PolicySummary;
  ttfts: number[];
  inTime: number;
  highP90: number;
  lowP90: number;
}

async function replay(trace: TraceRequest[], scale: number, setup: Omit<Setup, 'kind'>, ctx: BenchContext, policy: 'kv' | 'ttft' | 'round_robin') {
  ctx.progress(`${policy}: ${setup.name} x${scale}`);
  const started = performance.now();
  const run = await runVirtualFleet(trace, {
    workers: WORKERS,
    policy,
    engine: setup.enginePriority ? { ...ENGINE, schedulingPolicy: 'priority' } : ENGINE,
    forwardPriority: setup.enginePriority,
    seed: 0,
    arrivalScale: scale,
    highPriorityShare: HIGH_SHARE,
    routerQueue: setup.routerQueue,
    routing: setup.routing,
    onProgress: (done, total) => ctx.progress(`${setup.name} x${scale}: ${done}/${total}`),
  });
  return { run, summary: summarizeRun(run, performance.now() - started) };
}

/** Round robin over the sweep until it saturates: that load, and the sweep's rows. */
async function roundRobinSaturation(trace: TraceRequest[], ctx: BenchContext): Promise<{ load: number; rows: string[] }> {
  const rows: string[] = [];
  let first: number | undefined;
  for (const scale of SWEEP) {
    const s = (await replay(trace, scale, { name: 'round robin' }, ctx, 'round_robin')).summary;
    first ??= s.ttft_ms.p90;
    const saturated = s.ttft_ms.p90 > SATURATION_TTFT_GROWTH * first || s.refused > 0;
    rows.push(`| x${scale} | ${ms(s.ttft_ms.p90)} | ${(s.ttft_ms.p90 / first).toFixed(1)} | ${saturated ? 'yes' : 'no'} |`);
    if (saturated) return { load: scale, rows };
  }
  // (A short quick-run trace may never saturate: its heaviest load stands in, and the table says so.)
  return { load: SWEEP[SWEEP.length - 1], rows };
}

type Policy = 'kv' | 'ttft';
/** kv (the suite's policy since it was written) and ttft (serve's default: what a user gets). */
const POLICIES: readonly Policy[] = ['kv', 'ttft'];

/** Every setup at the overload with one policy, each request's TTFT against its own on that policy's unloaded fleet. */
async function measure(trace: TraceRequest[], overload: number, policy: Policy, ctx: BenchContext): Promise<Outcome[]> {
  const base = (await replay(trace, UNLOADED, { name: `${policy} unloaded` }, ctx, policy)).run.records.map((r) => r.firstTokenMs - r.arrivalMs);
  const outcomes: Outcome[] = [];
  for (const setup of SETUPS) {
    const { run: r, summary } = await replay(trace, overload, setup, ctx, policy);
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
  return outcomes;
}

function policyFigures(policy: Policy, outcomes: Outcome[]): Figure[] {
  const none = outcomes.find((o) => o.setup.kind === 'none')!;
  const bestRefusal = outcomes.filter((o) => o.setup.kind === 'refuse').reduce((a, b) => (b.inTime > a.inTime ? b : a));
  const queues = outcomes.filter((o) => o.setup.kind === 'queue' || o.setup.kind === 'engine');
  const bestQueue = queues.reduce((a, b) => (b.inTime > a.inTime ? b : a));
  const bestPriority = queues.reduce((a, b) => (b.highP90 / b.lowP90 < a.highP90 / a.lowP90 ? b : a));
  const figures: Figure[] = [];
  for (const q of queues) {
    const name = `policy ${policy}, ${q.setup.name}`;
    figures.push({
      name: `share of requests served within ${IN_TIME}x their unloaded TTFT, ${name}, over kvroute without the queue as a user gets it (nothing refused)`,
      value: q.inTime / none.inTime,
      unit: 'x',
      better: 'higher',
      target: { op: '>=', value: 1.5 },
      headline: q === bestQueue,
      note: `${pct(q.inTime)} (${q.summary.refused} refused) against ${pct(none.inTime)}`,
    });
    figures.push({
      name: `share of requests served within ${IN_TIME}x their unloaded TTFT, ${name}, over the best refusal cap measured (${bestRefusal.setup.name})`,
      value: q.inTime / bestRefusal.inTime,
      unit: 'x',
      better: 'higher',
      target: { op: '>=', value: 1.5 },
      headline: q === bestQueue,
      note: `${pct(q.inTime)} against ${pct(bestRefusal.inTime)} (${bestRefusal.summary.refused} refused); 1.5x would be ${pct(1.5 * bestRefusal.inTime)}${1.5 * bestRefusal.inTime > 1 ? ', over 100%: out of reach' : ''}`,
    });
    figures.push({
      name: `TTFT p90 of priority 1 over priority 0, ${name}`,
      value: q.highP90 / q.lowP90,
      unit: 'x',
      target: { op: '<=', value: 0.5 },
      headline: q === bestPriority,
      note: `${ms(q.highP90)} against ${ms(q.lowP90)}`,
    });
    figures.push({
      name: `TTFT p90, ${name}`,
      value: q.summary.ttft_ms.p90,
      unit: 'ms',
      reference: { name: 'no protection', value: none.summary.ttft_ms.p90 },
    });
  }
  return figures;
}

function table(outcomes: Outcome[]): string[] {
  return [
    '| setup | served | refused | in time | TTFT p50 | TTFT p90 | TTFT p99 | TTFT mean | p90 priority 1 | p90 priority 0 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...outcomes.map(
      (o) =>
        `| ${o.setup.name} | ${o.summary.completed} | ${o.summary.refused} | ${pct(o.inTime)} | ${ms(o.summary.ttft_ms.p50)} | ${ms(o.summary.ttft_ms.p90)} | ${ms(o.summary.ttft_ms.p99)} | ${ms(o.summary.ttft_ms.mean)} | ${ms(o.highP90)} | ${ms(o.lowP90)} |`,
    ),
    '',
  ];
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const trace = (await loadTrace(TRACE)).slice(0, ctx.quick ? 600 : Infinity);
  const rr = await roundRobinSaturation(trace, ctx);
  const overload = rr.load;
  const figures: Figure[] = [
    {
      name: 'first arrival rate of the sweep where round robin saturates (the load below)',
      value: overload,
      unit: 'x',
      note: `p90 past ${SATURATION_TTFT_GROWTH}x its x${SWEEP[0]} figure`,
    },
  ];
  const byPolicy = new Map<Policy, Outcome[]>();
  for (const policy of POLICIES) {
    const outcomes = await measure(trace, overload, policy, ctx);
    byPolicy.set(policy, outcomes);
    figures.push(...policyFigures(policy, outcomes));
  }
  const markdown = [
    `${trace.length} requests of synthetic_trace.jsonl, ${WORKERS} aggregated workers of ${ENGINE.kvBlocks} blocks of ${ENGINE.blockSize} tokens, arrivals x${overload} (the first load where round robin saturates, below); ${pct(HIGH_SHARE)} of the requests (seeded) at priority 1. "In time": TTFT within ${IN_TIME}x the same request's TTFT at x${UNLOADED} with the same policy; refused requests count as not in time. TTFT percentiles are over the served requests.`,
    '',
    "Refusing: kvroute without the queue refuses nothing by default (maxQueuedPrefillTokens has no default: the first row). With a cap it refuses (429) a request when the pool's booked prefill tokens and its own would pass the cap; the caps below are per worker x 4 workers.",
    '',
    ...POLICIES.flatMap((p) => [`Policy ${p}${p === 'ttft' ? " (serve's default)" : ''}:`, '', ...table(byPolicy.get(p)!)]),
    `Round robin over the load sweep (saturated: TTFT p90 past ${SATURATION_TTFT_GROWTH}x its p90 at x${SWEEP[0]}, or any refusal):`,
    '',
    '| load | round robin TTFT p90 | over x1 | saturated |',
    '|---|---:|---:|---|',
    ...rr.rows,
    '',
  ].join('\n');
  return {
    figures,
    sections: [{ title: 'Overload, synthetic trace', markdown }],
    charts: POLICIES.map((p) => ({
      name: `ttft-cdf-${p}`,
      title: `TTFT under overload, by setup, policy ${p}`,
      svg: cdfChart({
        title: `TTFT of served requests at x${overload}, synthetic trace, policy ${p}`,
        xLabel: 'time to first token (ms)',
        logX: true,
        series: byPolicy.get(p)!.map((o) => ({ name: o.setup.name, values: o.ttfts })),
      }),
    })),
    data: {
      overload,
      outcomes: POLICIES.map((p) => ({ policy: p, outcomes: byPolicy.get(p)!.map((o) => ({ setup: o.setup, in_time: o.inTime, summary: o.summary })) })),
    },
  };
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '-');

export const suite: BenchSuite = { name: 'overload', title: 'Router queue under overload', order: 61, run };
