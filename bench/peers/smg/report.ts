// The SMG comparison as report figures (each kvroute figure against SMG's cache_aware of the same
// run, with the targets of issue 14), a Markdown section and a chart.
import { formatNumber } from '../../lib/format.js';
import { median } from '../../lib/stats.js';
import type { Figure, SuiteResult } from '../../lib/suite.js';
import { barChart } from '../../lib/svg.js';
import { CONCURRENCY, STEADY_RATE, type AddedLatency, type ThroughputRound } from './compare.js';
import { ROUTER_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { ROUTER_FLAGS_ENV } from './router-flags.js';
import { cpuBudget, cpuBudgetMarkdown, routerPlusWorldBound } from './cpu-budget.js';

export const SMG = 'smg-text';
export const KV_TEXT = 'kvroute-text';
export const KV_IDS = 'kvroute-ids';

export interface SmgComparison {
  smgVersion: string;
  engines: number;
  promptTokens: number;
  prompts: number;
  outputTokens: number;
  /** The node flags kvroute's router process ran with. */
  routerNodeFlags: readonly string[];
  throughput: Record<string, ThroughputRound[]>;
  added: Record<string, AddedLatency>;
  /** What SMG answered to a token-id prompt, and kvroute. */
  tokenIdProbe: { smg: { status: number; message: string }; kvroute: { status: number } };
}

const LABEL: Record<string, string> = {
  [SMG]: 'SMG cache_aware, text prompts',
  [KV_TEXT]: 'kvroute kv, text prompts',
  [KV_IDS]: 'kvroute kv, token-id prompts',
};

export interface ThroughputSummary {
  rps: number;
  cpuUsPerRequest: number;
  roundsRps: number[];
  roundsCpu: number[];
  failed: number;
}

export function summarizeThroughput(rounds: readonly ThroughputRound[]): ThroughputSummary {
  const cpu = rounds.map((r) => r.cpuUsPerRequest).filter((x): x is number => x !== undefined);
  return {
    rps: median(rounds.map((r) => r.rps)),
    cpuUsPerRequest: cpu.length ? median(cpu) : Number.NaN,
    roundsRps: rounds.map((r) => r.rps),
    roundsCpu: cpu,
    failed: rounds.reduce((n, r) => n + r.failed, 0),
  };
}

/** How the router's node flags read in the report, saying whether they are npm start's. */
export function nodeFlagsText(flags: readonly string[]): string {
  if (flags.length === 0) return "node without flags, not npm start's";
  const same = flags.length === ROUTER_NODE_FLAGS.length && flags.every((f, i) => f === ROUTER_NODE_FLAGS[i]);
  return `node ${flags.map((f) => `\`${f}\``).join(' ')}${same ? ", npm start's flags" : `, not npm start's (${ROUTER_FLAGS_ENV})`}`;
}

export function smgReport(c: SmgComparison): SuiteResult {
  const t = Object.fromEntries(Object.entries(c.throughput).map(([k, v]) => [k, summarizeThroughput(v)])) as Record<string, ThroughputSummary>;
  const smg = t[SMG];
  const smgAdded = c.added[SMG];
  const setting = `${c.engines} instant engines, ${c.promptTokens}-token prompts, streamed`;
  const list = (xs: number[]) => xs.map((x) => formatNumber(x)).join(', ');
  const rpsFigure = (who: string, headline: boolean): Figure => ({
    name: `requests per second, ${LABEL[who]} vs ${LABEL[SMG]}, ${CONCURRENCY} streams in flight, ${setting}`,
    value: t[who].rps,
    unit: 'req/s',
    reference: { name: LABEL[SMG], value: smg.rps },
    target: { op: '>=', value: 1.5 * smg.rps },
    headline,
    note: `median of ${t[who].roundsRps.length} interleaved rounds (${list(t[who].roundsRps)}; SMG ${list(smg.roundsRps)}); target 1.5x SMG${t[who].failed ? `; ${t[who].failed} failed` : ''}`,
  });
  const cpuFigure = (who: string, headline: boolean): Figure => ({
    name: `router process CPU per request, ${LABEL[who]} vs ${LABEL[SMG]}, ${CONCURRENCY} streams in flight`,
    value: t[who].cpuUsPerRequest,
    unit: 'us',
    reference: { name: LABEL[SMG], value: smg.cpuUsPerRequest },
    target: { op: '<=', value: smg.cpuUsPerRequest },
    headline,
    note: `every thread of the router's process (/proc/<pid>/stat) over each round / requests; rounds ${list(t[who].roundsCpu)}, SMG ${list(smg.roundsCpu)}`,
  });
  const addedFigure = (who: string, p: 'p50' | 'p99', headline: boolean): Figure => {
    const a = c.added[who];
    return {
      name: `added latency ${p} at a steady ${STEADY_RATE} req/s, ${LABEL[who]} vs ${LABEL[SMG]}`,
      value: p === 'p50' ? a.overhead_p50_ms : a.overhead_p99_ms,
      unit: 'ms',
      reference: { name: LABEL[SMG], value: p === 'p50' ? smgAdded.overhead_p50_ms : smgAdded.overhead_p99_ms },
      better: 'lower',
      ...(p === 'p99' ? { target: { op: '<=' as const, value: 0.5 } } : {}),
      headline,
      note: `routed minus direct, median of ${a.rounds} interleaved rounds (${(p === 'p50' ? a.round_overhead_p50_ms : a.round_overhead_p99_ms).join(', ')} ms); pooled p99 ${a.pooled_overhead_p99_ms} ms${a.failed ? `; ${a.failed} failed` : ''}`,
    };
  };
  const figures: Figure[] = [
    rpsFigure(KV_TEXT, true),
    rpsFigure(KV_IDS, false),
    cpuFigure(KV_TEXT, true),
    cpuFigure(KV_IDS, false),
    addedFigure(KV_TEXT, 'p99', true),
    addedFigure(KV_IDS, 'p99', true),
    addedFigure(KV_TEXT, 'p50', false),
    addedFigure(KV_IDS, 'p50', false),
  ];
  const row = (who: string) => {
    const a = c.added[who];
    return `| ${LABEL[who]} | ${formatNumber(t[who].rps)} | ${formatNumber(t[who].cpuUsPerRequest)} | ${a.overhead_p50_ms} / ${a.overhead_p99_ms} | ${a.round_overhead_p99_ms.join(', ')} | ${a.routed_p50_ms} / ${a.routed_p99_ms} | ${a.direct_p50_ms} / ${a.direct_p99_ms} | ${a.cpu_us_per_request ?? 'n/a'} |`;
  };
  const probe = c.tokenIdProbe;
  const saturated = [SMG, KV_TEXT, KV_IDS].filter((w) => t[w].rps < STEADY_RATE);
  const saturation = saturated.length
    ? `**Below the offered rate**: ${saturated.map((w) => `${LABEL[w]} served ${formatNumber(t[w].rps)} req/s in the closed loop`).join('; ')}, less than the steady ${STEADY_RATE} req/s: its added latency there is the queue that builds up.`
    : '';
  const budgets = [SMG, KV_TEXT, KV_IDS].map((w) => ({ label: LABEL[w], budget: cpuBudget(c.throughput[w] ?? []) }));
  const smgBudget = budgets[0].budget;
  const budgetText =
    smgBudget && budgets.every((b) => b.budget)
      ? cpuBudgetMarkdown(budgets as Array<{ label: string; budget: NonNullable<typeof smgBudget> }>, smgBudget, 1.5)
      : '';
  const markdown = [
    `SMG ${c.smgVersion} (pip, the Rust router spun out of SGLang) runs \`smg launch --policy cache_aware\` with Qwen2.5's tokenizer folder`,
    'as its model path and no workers; the engines are added with POST /workers (runtime_type vllm, the served model named).',
    `kvroute runs in a process of its own (startServer, as \`kvroute serve\`, ${nodeFlagsText(c.routerNodeFlags)}), policy kv, the same`,
    'tokenizer, and the approximate indexer: the engines publish no KV events, so each router learns from its own decisions.',
    `Both route to the same ${c.engines} instant engines (bench/frontend/instant-engine.ts: ${c.outputTokens} output tokens at once), run with the`,
    "load generator in a process of their own (bench/frontend/world.ts: the engines on its main thread, the closed-loop load generator on a thread kept for the run with undici's dispatch, the open loop on the main thread with its request()). Prompts: " +
      `${c.prompts} texts of ${formatNumber(c.promptTokens)} tokens (8 shared 512-token openings, then a passage of their own), sent in turn;`,
    'kvroute also gets the token ids of the same texts. Throughput: closed loop, the runs of one round in rotating order; CPU: the',
    "router process's user + system time over the run (all its threads) / requests. Added latency: open loop at a steady",
    `${STEADY_RATE} req/s, latency through the router minus straight to an engine with the same bodies, per round, median of rounds.`,
    '',
    `**Token-id prompts**: SMG answered ${probe.smg.status} (${probe.smg.message}); kvroute answered ${probe.kvroute.status}. SMG's figures are for text prompts only.`,
    ...(saturation ? ['', saturation] : []),
    '',
    '| router | req/s | router CPU per request (us) | added latency p50 / p99 (ms) | added p99 per round (ms) | routed p50 / p99 (ms), pooled | direct p50 / p99 (ms), pooled | CPU per request at 500 req/s (us) |',
    '|---|---|---|---|---|---|---|---|',
    row(SMG),
    row(KV_TEXT),
    row(KV_IDS),
    ...(budgetText ? ['', budgetText] : []),
  ].join('\n');
  const who = [SMG, KV_TEXT, KV_IDS];
  return {
    figures,
    sections: [{ title: 'SMG cache_aware and kvroute kv on the same engines', markdown }],
    charts: [
      {
        name: 'smg-throughput',
        title: 'Requests per second, SMG and kvroute',
        svg: barChart({
          title: `Requests per second, ${CONCURRENCY} streams in flight, ${c.engines} instant engines`,
          categories: who.map((w) => LABEL[w]),
          series: [{ name: 'requests per second', values: who.map((w) => t[w].rps) }],
          yLabel: 'requests / s',
        }),
      },
      {
        name: 'smg-cpu',
        title: 'Router CPU per request, SMG and kvroute',
        svg: barChart({
          title: `Router process CPU per request, ${CONCURRENCY} streams in flight`,
          categories: who.map((w) => LABEL[w]),
          series: [{ name: 'CPU per request', values: who.map((w) => t[w].cpuUsPerRequest) }],
          yLabel: 'us per request',
        }),
      },
    ],
    data: {
      routerNodeFlags: c.routerNodeFlags,
      cpuBudget: Object.fromEntries(budgets.map((b) => [b.label, b.budget])),
      routerPlusWorldBoundUs: smgBudget ? routerPlusWorldBound(smgBudget, 1.5) : undefined,
      throughput: t,
      rounds: c.throughput,
      added: c.added,
      tokenIdProbe: probe,
      promptTokens: c.promptTokens,
      prompts: c.prompts,
    },
  };
}
