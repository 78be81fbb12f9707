// Routing quality on the real Mooncake traces (issue 6): each policy replayed offline in virtual
// time through the live router (PrefillRouter over KvRouters, legs to the simulated engine model
// over the virtual transport), on the default fleet of 4 aggregated workers. Reports TTFT, hit rate against the infinite-cache bound, and a load sweep.
import { fileURLToPath } from 'node:url';
import { replayMarkdown } from '../../src/sim/replay/markdown.js';
import { REPLAY_POLICIES, type ReplayPolicy } from '../../src/sim/replay/policies.js';
import { runReplay, sweepLoads, type ReplayReport } from '../../src/sim/replay/replay.js';
import { loadTrace, type TraceRequest } from '../../src/sim/replay/trace.js';
import { barChart, cdfChart } from '../lib/svg.js';
import { ttftVsLoadChart } from '../lib/replay-charts.js';
import type { BenchContext, BenchSuite, Chart, Figure, Section, SuiteResult } from '../lib/suite.js';

const TRACES = fileURLToPath(new URL('../../traces/', import.meta.url));
const WORKERS = 4;
const BLOCK_SIZE = 16;
/** Dynamo's mocker default capacity (16384 blocks of 64 tokens): 1M tokens per worker. */
const KV_BLOCKS = 65_536;
/** A cache that holds the synthetic trace's whole working set (~22M tokens over 4 workers). */
const LARGE_KV_BLOCKS = 1 << 20;
const SEED = 0;

interface TraceRun {
  report: ReplayReport;
  ttfts: Map<ReplayPolicy, number[]>;
}

/** The sweep compares the baseline, the best load-only policy, kv and kv_ttft (all would double its time). */
const SWEEP_POLICIES: readonly ReplayPolicy[] = ['round_robin', 'least_loaded', 'kv', 'kv_ttft'];

async function replay(
  ctx: BenchContext,
  name: string,
  trace: TraceRequest[],
  policies: readonly ReplayPolicy[],
  extra: { kvBlocks?: number; sweep?: number[] } = {},
): Promise<TraceRun> {
  const ttfts = new Map<ReplayPolicy, number[]>();
  const report = await runReplay({
    trace,
    traceName: name,
    workers: WORKERS,
    policies,
    blockSize: BLOCK_SIZE,
    kvBlocks: extra.kvBlocks ?? KV_BLOCKS,
    arrivalScale: 1,
    seed: SEED,
    sweepScales: extra.sweep,
    sweepPolicies: SWEEP_POLICIES.filter((p) => policies.includes(p)),
    onProgress: (m) => ctx.progress(`${name}: ${m}`),
    onRun: (policy, scale, run) => {
      if (scale !== 1) return;
      ttfts.set(
        policy,
        run.records.filter((r) => Number.isFinite(r.firstTokenMs)).map((r) => r.firstTokenMs - r.arrivalMs),
      );
    },
  });
  return { report, ttfts };
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const limit = ctx.quick ? 300 : Infinity;
  const policies: readonly ReplayPolicy[] = ctx.quick ? ['round_robin', 'kv', 'kv_ttft'] : REPLAY_POLICIES;
  const synthetic = (await loadTrace(`${TRACES}synthetic_trace.jsonl`)).slice(0, limit);
  const conversation = (await loadTrace(`${TRACES}conversation_trace.first-half.jsonl`)).slice(0, limit);

  const syn = await replay(ctx, 'synthetic_trace.jsonl', synthetic, policies, { sweep: sweepLoads(1, ctx.quick ? 4 : 8) });
  const conv = await replay(ctx, 'conversation_trace.first-half.jsonl', conversation, policies);
  const big = await replay(ctx, 'synthetic_trace.jsonl', synthetic, ['round_robin', 'kv', 'kv_ttft'], { kvBlocks: LARGE_KV_BLOCKS });

  const figures: Figure[] = [];
  for (const policy of ['kv', 'kv_ttft'] as const) {
    figures.push(...sweepRatios(syn.report, policy));
    const rr = conv.report.policies.round_robin;
    const p = conv.report.policies[policy];
    figures.push({
      name: `${policy} TTFT p50, conversation trace, x1`,
      value: p.ttft_ms.p50,
      unit: 'ms',
      reference: { name: 'round_robin', value: rr.ttft_ms.p50 },
      target: { op: '<=', value: rr.ttft_ms.p50 },
      headline: true,
    });
    for (const [label, r] of [
      [`${KV_BLOCKS} KV blocks per worker`, syn.report],
      [`${LARGE_KV_BLOCKS} KV blocks per worker (the whole working set fits)`, big.report],
    ] as const) {
      figures.push({
        name: `${policy} hit rate as a share of the infinite-cache bound, synthetic trace, ${label}`,
        value: (r.policies[policy].hit_rate / r.hit_rate_bound) * 100,
        unit: '%',
        reference: { name: 'round_robin', value: (r.policies.round_robin.hit_rate / r.hit_rate_bound) * 100 },
        target: { op: '>=', value: 90 },
        headline: true,
      });
    }
  }
  figures.push({
    name: 'simulated time per wall-clock time, whole report (one core)',
    value: (syn.report.simulated_s + conv.report.simulated_s) / (syn.report.wall_s + conv.report.wall_s),
    unit: 'x',
    better: 'higher',
  });

  const sections: Section[] = [
    { title: 'Synthetic trace', markdown: replayMarkdown(syn.report) },
    { title: 'Conversation trace', markdown: replayMarkdown(conv.report) },
    { title: 'Synthetic trace, large KV cache', markdown: replayMarkdown(big.report) },
  ];
  if (ctx.quick) sections.unshift({ title: 'Quick run', markdown: `The first ${limit} requests of each trace, round_robin, kv and kv_ttft only.\n` });

  return {
    figures,
    sections,
    charts: charts(syn, conv, big.report),
    data: { synthetic: syn.report, conversation: conv.report, synthetic_large_cache: big.report },
  };
}

/** A policy's TTFT p90 over round_robin's at every sweep load where round_robin is not saturated. */
function sweepRatios(r: ReplayReport, policy: ReplayPolicy): Figure[] {
  const points = (r.sweep ?? []).filter((p) => p.policies.round_robin && !p.policies.round_robin.saturated && p.policies[policy]);
  return points.map((p, i) => ({
    name: `${policy} TTFT p90 / round_robin TTFT p90, synthetic trace, arrivals x${p.scale} (${p.offered_rps} req/s)`,
    value: p.policies[policy].ttft_p90_ms / p.policies.round_robin.ttft_p90_ms,
    unit: 'x',
    target: { op: '<=', value: 0.5 },
    headline: i === points.length - 1,
    note: 'the highest load of the sweep where round_robin is not saturated is the headline',
  }));
}

function charts(syn: TraceRun, conv: TraceRun, big: ReplayReport): Chart[] {
  const out: Chart[] = [];
  for (const [name, t] of [
    ['synthetic', syn],
    ['conversation', conv],
  ] as const) {
    out.push({
      name: `ttft-cdf-${name}`,
      title: `TTFT per policy, ${name} trace`,
      svg: cdfChart({
        title: `TTFT distribution per policy, ${name} trace (x1, ${WORKERS} workers)`,
        xLabel: 'time to first token (ms)',
        logX: true,
        series: [...t.ttfts].map(([policy, values]) => ({ name: policy, values })),
      }),
    });
  }
  const reports = [
    ['synthetic', syn.report],
    ['conversation', conv.report],
    ['synthetic, large cache', big],
  ] as const;
  const policyNames = Object.keys(syn.report.policies);
  const sweepNames = Object.keys(syn.report.sweep?.[0]?.policies ?? {});
  out.push({
    name: 'hit-rate',
    title: 'Prefix hit rate against the infinite-cache bound',
    svg: barChart({
      title: 'Prefix hit rate per policy and the infinite-cache bound (%)',
      categories: reports.map(([n]) => n),
      series: [
        ...policyNames.map((p) => ({ name: p, values: reports.map(([, r]) => (r.policies[p] ? r.policies[p].hit_rate * 100 : null)) })),
        { name: 'bound', values: reports.map(([, r]) => r.hit_rate_bound * 100) },
      ],
      yLabel: 'hit rate (%)',
    }),
  });
  if (syn.report.sweep?.length) {
    out.push({
      name: 'ttft-vs-load',
      title: 'TTFT p90 against offered load, synthetic trace',
      svg: ttftVsLoadChart(syn.report.sweep, sweepNames, 'TTFT p90 against offered load, synthetic trace'),
    });
  }
  return out;
}

export const suite: BenchSuite = { name: 'replay', title: 'Trace replay: routing quality', order: 60, run };
