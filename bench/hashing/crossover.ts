// HashPool: where the Piscina pool starts to beat hashing inline. For growing batches of
// 2k-token prompts, one hashPrompts call with the placement forced each way, measured in
// alternation: its latency, and how long it kept the calling thread's event loop busy (event
// loop utilisation), which is what the pool is for. Also the pool's round trip and how much
// faster its threads hash together than one alone (the parallelism the machine really offers).
import { availableParallelism } from 'node:os';
import { DEFAULT_POOL_THRESHOLD_TOKENS, HashPool } from '../../src/hash-pool/hash-pool.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { median, summarize } from '../lib/stats.js';
import type { BenchContext, Chart, Figure } from '../lib/suite.js';
import { lineChart } from '../lib/svg.js';
import { sampleAsync } from '../lib/timer.js';
import { promptOf } from './prompts.js';

const BLOCK_SIZE = 16;
const PROMPT_TOKENS = 2048;

/** Medians for one batch size: latency and the calling thread's event-loop busy time, in us. */
export interface CrossoverPoint {
  prompts: number;
  tokens: number;
  /** hashPrompts (prompts copied into one batch by the calling thread). */
  inlineUs: number;
  poolUs: number;
  inlineBusyUs: number;
  poolBusyUs: number;
  /** hashBatch over tokens already in a SharedArrayBuffer (nothing copied). */
  sharedInlineUs: number;
  sharedPoolUs: number;
  sharedPoolBusyUs: number;
}

type Variant = 'inline' | 'pool' | 'sharedInline' | 'sharedPool';

async function timed(call: () => Promise<unknown>): Promise<{ us: number; busyUs: number }> {
  const elu = performance.eventLoopUtilization();
  const t0 = performance.now();
  await call();
  const us = (performance.now() - t0) * 1000;
  return { us, busyUs: Math.min(us, performance.eventLoopUtilization(elu).active * 1000) };
}

async function sweep(ctx: BenchContext, pool: HashPool): Promise<CrossoverPoint[]> {
  const counts = ctx.quick ? [1, 4, 16, 64, 256] : [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
  const all = Array.from({ length: counts[counts.length - 1] }, (_, i) => promptOf(PROMPT_TOKENS, 1000 + i));
  const shared = new Uint32Array(new SharedArrayBuffer(all.length * PROMPT_TOKENS * 4));
  all.forEach((p, i) => shared.set(p, i * PROMPT_TOKENS));
  const points: CrossoverPoint[] = [];
  for (const n of counts) {
    ctx.progress(`pool vs inline, ${n} prompts of ${PROMPT_TOKENS} tokens`);
    const batch = all.slice(0, n);
    const offsets = Uint32Array.from({ length: n + 1 }, (_, i) => i * PROMPT_TOKENS);
    const calls: Record<Variant, () => Promise<unknown>> = {
      inline: () => pool.hashPrompts(batch, BLOCK_SIZE, { placement: 'inline' }),
      pool: () => pool.hashPrompts(batch, BLOCK_SIZE, { placement: 'pool' }),
      sharedInline: () => pool.hashBatch(shared, offsets, BLOCK_SIZE, { placement: 'inline' }),
      sharedPool: () => pool.hashBatch(shared, offsets, BLOCK_SIZE, { placement: 'pool' }),
    };
    const variants = Object.keys(calls) as Variant[];
    const budgetTokens = ctx.quick ? 3e6 : 2e7;
    const reps = Math.max(ctx.quick ? 5 : 15, Math.min(ctx.quick ? 50 : 200, Math.floor(budgetTokens / (n * PROMPT_TOKENS))));
    const us = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
    const busy = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
    for (let r = -2; r < reps; r++) {
      // Taking turns, each variant first in turn, so all see the same background noise.
      for (let k = 0; k < variants.length; k++) {
        const v = variants[(k + r + 2) % variants.length];
        const t = await timed(calls[v]);
        if (r >= 0) {
          us[v].push(t.us);
          busy[v].push(t.busyUs);
        }
      }
    }
    points.push({
      prompts: n,
      tokens: n * PROMPT_TOKENS,
      inlineUs: median(us.inline),
      poolUs: median(us.pool),
      inlineBusyUs: median(busy.inline),
      poolBusyUs: median(busy.pool),
      sharedInlineUs: median(us.sharedInline),
      sharedPoolUs: median(us.sharedPool),
      sharedPoolBusyUs: median(busy.sharedPool),
    });
  }
  return points;
}

/** Tokens per second of big pooled batches with every thread vs one thread. */
async function parallelSpeedup(ctx: BenchContext, threads: number): Promise<number> {
  const tokens = ctx.quick ? 1 << 21 : 1 << 23;
  const shared = new Uint32Array(new SharedArrayBuffer(tokens * 4));
  shared.set(promptOf(tokens, 3));
  const offsets = Uint32Array.from({ length: tokens / PROMPT_TOKENS + 1 }, (_, i) => i * PROMPT_TOKENS);
  const rates: Record<number, number[]> = { 1: [], [threads]: [] };
  const pools = [new HashPool({ threads: 1 }), new HashPool({ threads })];
  try {
    for (const p of pools) await p.hashBatch(shared, offsets, BLOCK_SIZE, { placement: 'pool' });
    for (let r = 0; r < (ctx.quick ? 4 : 12); r++) {
      for (const p of pools) {
        const t0 = performance.now();
        await p.hashBatch(shared, offsets, BLOCK_SIZE, { placement: 'pool' });
        rates[p.threads].push(tokens / (performance.now() - t0));
      }
    }
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
  return median(rates[threads]) / median(rates[1]);
}

export async function crossover(ctx: BenchContext): Promise<{ figures: Figure[]; charts: Chart[]; table: string; points: CrossoverPoint[] }> {
  const threads = availableParallelism();
  const pool = new HashPool({ threads });
  let roundTripUs: number;
  let points: CrossoverPoint[];
  try {
    ctx.progress(`pool round trip (${threads} threads)`);
    const tiny = [promptOf(BLOCK_SIZE, 7)];
    const rt = await sampleAsync(() => pool.hashPrompts(tiny, BLOCK_SIZE, { placement: 'pool' }), {
      warmup: 50,
      samples: ctx.quick ? 300 : 2000,
      maxMs: ctx.quick ? 1500 : 8000,
    });
    roundTripUs = summarize(rt.perCallNs).p50 / 1000;
    points = await sweep(ctx, pool);
  } finally {
    await pool.close();
  }
  ctx.progress(`pool throughput, ${threads} threads vs 1`);
  const speedup = threads > 1 ? await parallelSpeedup(ctx, threads) : 1;

  const threshold = (ok: (p: CrossoverPoint) => boolean) => {
    // The first size from which the condition holds for every larger size too.
    let from = -1;
    for (let i = points.length - 1; i >= 0 && ok(points[i]); i--) from = i;
    return from >= 0 ? points[from].tokens : Number.NaN;
  };
  const largest = points[points.length - 1];
  const never = `not up to ${formatCount(largest.tokens)} tokens`;
  const label = `${PROMPT_TOKENS}-token prompts, ${threads} threads`;
  const latencyWins = threshold((p) => p.poolUs < p.inlineUs);
  const sharedLatencyWins = threshold((p) => p.sharedPoolUs < p.sharedInlineUs);
  const sharedFrees = threshold((p) => p.sharedPoolBusyUs < p.sharedInlineUs / 2);
  const figures: Figure[] = [
    {
      name: `HashPool round trip, 1-block batch (${threads} threads)`,
      value: roundTripUs,
      unit: 'us',
      better: 'lower',
      note: 'median latency of hashPrompts with placement "pool"',
    },
    {
      name: `HashPool throughput with ${threads} threads vs 1 thread`,
      value: speedup,
      unit: '×',
      better: 'higher',
      note: 'big zero-copy batches; bounds what the pool can gain on this machine',
    },
    {
      name: `hashPrompts: the pool's latency beats inline from (${label})`,
      value: latencyWins,
      unit: 'tokens per batch',
      headline: true,
      note: Number.isNaN(latencyWins) ? never : "the smallest batch from which the pool's median latency stays below inline's",
    },
    {
      name: `hashBatch over shared tokens: the pool's latency beats inline from (${label})`,
      value: sharedLatencyWins,
      unit: 'tokens per batch',
      note: Number.isNaN(sharedLatencyWins) ? never : 'tokens already in a SharedArrayBuffer: nothing is copied',
    },
    {
      name: `hashBatch over shared tokens: the pool halves the calling thread's busy time from (${label})`,
      value: sharedFrees,
      unit: 'tokens per batch',
      headline: true,
      note: Number.isNaN(sharedFrees) ? never : "event-loop busy time with the pool below half of inline's latency, from this size on",
    },
    {
      name: 'HashPool default threshold (DEFAULT_POOL_THRESHOLD_TOKENS)',
      value: DEFAULT_POOL_THRESHOLD_TOKENS,
      unit: 'tokens per batch',
      note: 'the configured default, set from these measurements on the reference machine',
    },
    {
      name: `hashPrompts, ${formatCount(largest.tokens)} tokens: pool latency`,
      value: largest.poolUs / 1000,
      unit: 'ms',
      reference: { name: 'inline', value: largest.inlineUs / 1000 },
      better: 'lower',
      note: `event loop busy ${formatNumber(largest.poolBusyUs / 1000)} ms with the pool, ${formatNumber(largest.inlineBusyUs / 1000)} ms inline`,
    },
  ];
  const rows = ['| Batch | tokens | hashPrompts inline | hashPrompts pool (busy) | shared inline | shared pool (busy) |', '|---|---|---|---|---|---|'];
  const us = (v: number) => `${formatNumber(v)} us`;
  for (const p of points) {
    rows.push(
      `| ${p.prompts} × ${PROMPT_TOKENS} | ${formatCount(p.tokens)} | ${us(p.inlineUs)} | ${us(p.poolUs)} (${us(p.poolBusyUs)}) | ${us(p.sharedInlineUs)} | ${us(p.sharedPoolUs)} (${us(p.sharedPoolBusyUs)}) |`,
    );
  }
  const axis = { xLabel: 'tokens per batch (log scale)', logX: true, logY: true, markers: true };
  const latency = lineChart({
    ...axis,
    title: `Batch hashing latency: inline vs Piscina pool (${threads} threads)`,
    yLabel: 'latency per batch, us (log scale)',
    series: [
      { name: 'hashPrompts, inline', points: points.map((p) => [p.tokens, p.inlineUs]) },
      { name: 'hashPrompts, pool', points: points.map((p) => [p.tokens, p.poolUs]) },
      { name: 'shared tokens, inline', points: points.map((p) => [p.tokens, p.sharedInlineUs]), dashed: true },
      { name: 'shared tokens, pool', points: points.map((p) => [p.tokens, p.sharedPoolUs]), dashed: true },
    ],
  });
  const busy = lineChart({
    ...axis,
    title: 'Calling thread busy per batch (event-loop utilisation)',
    yLabel: 'event loop busy per batch, us (log scale)',
    series: [
      { name: 'inline (= latency)', points: points.map((p) => [p.tokens, p.inlineBusyUs]) },
      { name: 'hashPrompts, pool', points: points.map((p) => [p.tokens, p.poolBusyUs]) },
      { name: 'shared tokens, pool', points: points.map((p) => [p.tokens, p.sharedPoolBusyUs]), dashed: true },
    ],
  });
  return {
    figures,
    charts: [
      { name: 'pool-latency', title: 'Pool vs inline: latency', svg: latency },
      { name: 'pool-busy', title: 'Pool vs inline: calling thread busy', svg: busy },
    ],
    table: rows.join('\n'),
    points,
  };
}
