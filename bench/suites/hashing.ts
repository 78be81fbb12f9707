// Block hashing: throughput of computeBlockHashes (one core, the public API with its argument
// checks) next to the plain TypeScript XXH3 reference, and where the Piscina pool starts to beat
// hashing inline.
import { availableParallelism } from 'node:os';
import { HashPool } from '../../src/core/hash-pool.js';
import { computeBlockHashes, computeSequenceHashes } from '../../src/core/hashing.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { median, summarize } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Chart, Figure, SuiteResult } from '../lib/suite.js';
import { barChart, lineChart } from '../lib/svg.js';
import { interleavedRates, sampleAsync, sampleCalls } from '../lib/timer.js';
import { blockHashesReference, sequenceHashesReference } from '../reference/xxh3.js';

const BLOCK_SIZE = 16;
const GB = 1e9;

/** Token ids as a tokenizer would produce them (a 152k vocabulary), deterministic. */
function promptOf(tokens: number, salt: number): Uint32Array {
  const out = new Uint32Array(tokens);
  let x = (salt * 2654435761 + 1) >>> 0;
  for (let i = 0; i < tokens; i++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    out[i] = x % 152_000;
  }
  return out;
}

async function throughput(ctx: BenchContext): Promise<{ figures: Figure[]; chart: Chart; table: string }> {
  const sizes = [1024, 8192, 65536];
  const figures: Figure[] = [];
  const rows: string[] = ['| Prompt | native | reference | ratio |', '|---|---|---|---|'];
  const nativeGBs: number[] = [];
  const refGBs: number[] = [];
  for (const tokens of sizes) {
    ctx.progress(`computeBlockHashes throughput, ${formatCount(tokens)}-token prompts`);
    const prompts = Array.from({ length: 8 }, (_, i) => promptOf(tokens, i));
    const bytes = tokens * 4;
    let k = 0;
    const rates = interleavedRates(
      {
        native: () => (computeBlockHashes(prompts[k++ & 7], BLOCK_SIZE), bytes),
        reference: () => (blockHashesReference(prompts[k++ & 7], BLOCK_SIZE), bytes),
      },
      { rounds: ctx.quick ? 3 : 9, minMsPerRound: ctx.quick ? 60 : 250 },
    );
    const n = median(rates.native) / GB;
    const r = median(rates.reference) / GB;
    nativeGBs.push(n);
    refGBs.push(r);
    rows.push(`| ${formatCount(tokens)} tokens | ${formatNumber(n)} GB/s | ${formatNumber(r)} GB/s | ${formatNumber(n / r)}× |`);
    figures.push({
      name: `computeBlockHashes throughput, ${tokens / 1024}k-token prompt (block ${BLOCK_SIZE})`,
      value: n,
      unit: 'GB/s',
      reference: { name: 'plain TS XXH3', value: r },
      target: { op: '>=', value: 5 },
      headline: tokens === 8192,
      note: 'one core, median of interleaved rounds, bytes = 4 per token',
    });
  }
  const chart = barChart({
    title: `Block hashing throughput (block size ${BLOCK_SIZE}, one core)`,
    categories: sizes.map((t) => `${t / 1024}k tokens`),
    series: [
      { name: 'native (Rust XXH3)', values: nativeGBs },
      { name: 'plain TS XXH3', values: refGBs },
    ],
    yLabel: 'GB/s (log scale)',
    logY: true,
  });
  return { figures, chart: { name: 'throughput', title: 'Block hashing throughput', svg: chart }, table: rows.join('\n') };
}

function sequenceHashing(ctx: BenchContext): Figure {
  ctx.progress('computeSequenceHashes, 512 blocks');
  const local = computeBlockHashes(promptOf(8192, 99), BLOCK_SIZE);
  const blocks = local.length;
  const rates = interleavedRates(
    { native: () => (computeSequenceHashes(local), blocks), reference: () => (sequenceHashesReference(local), blocks) },
    { rounds: ctx.quick ? 3 : 7, minMsPerRound: ctx.quick ? 40 : 150 },
  );
  return {
    name: 'computeSequenceHashes, 512 blocks',
    value: 1e9 / median(rates.native),
    unit: 'ns/block',
    reference: { name: 'plain TS XXH3', value: 1e9 / median(rates.reference) },
    better: 'lower',
  };
}

interface CrossoverPoint {
  prompts: number;
  tokens: number;
  inlineUs: number;
  poolUs: number;
}

/**
 * Latency of one hashPrompts call for growing batches of 2k-token prompts, inline vs pool
 * (placement forced), measured in alternation. The pool wins from the first size at which it is
 * faster and stays faster.
 */
async function crossover(ctx: BenchContext): Promise<{ figures: Figure[]; chart: Chart; table: string; points: CrossoverPoint[] }> {
  const threads = availableParallelism();
  const pool = new HashPool({ threads });
  const promptTokens = 2048;
  const counts = ctx.quick ? [1, 4, 16, 64, 256] : [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
  const all = Array.from({ length: counts[counts.length - 1] }, (_, i) => promptOf(promptTokens, 1000 + i));
  const points: CrossoverPoint[] = [];
  let roundTripUs = Number.NaN;
  try {
    ctx.progress(`pool round trip (${threads} threads)`);
    const tiny = [promptOf(BLOCK_SIZE, 7)];
    const rt = await sampleAsync(() => pool.hashPrompts(tiny, BLOCK_SIZE, { placement: 'pool' }), {
      warmup: 50,
      samples: ctx.quick ? 300 : 2000,
      maxMs: ctx.quick ? 1500 : 8000,
    });
    roundTripUs = summarize(rt.perCallNs).p50 / 1000;
    for (const n of counts) {
      ctx.progress(`pool vs inline, ${n} prompts of ${promptTokens} tokens`);
      const batch = all.slice(0, n);
      const reps = Math.max(ctx.quick ? 5 : 15, Math.min(ctx.quick ? 60 : 200, Math.floor((ctx.quick ? 4e6 : 2e7) / (n * promptTokens))));
      const inline: number[] = [];
      const pooled: number[] = [];
      const time = async (placement: 'inline' | 'pool'): Promise<number> => {
        const t0 = performance.now();
        await pool.hashPrompts(batch, BLOCK_SIZE, { placement });
        return (performance.now() - t0) * 1000;
      };
      for (let r = -2; r < reps; r++) {
        // Alternating, and in turns first, so both placements see the same background noise.
        const a = r % 2 === 0 ? await time('inline') : Number.NaN;
        const b = await time('pool');
        const c = r % 2 !== 0 ? await time('inline') : a;
        if (r >= 0) {
          inline.push(c);
          pooled.push(b);
        }
      }
      points.push({ prompts: n, tokens: n * promptTokens, inlineUs: median(inline), poolUs: median(pooled) });
    }
  } finally {
    await pool.close();
  }
  let winsFrom = -1;
  for (let i = points.length - 1; i >= 0 && points[i].poolUs < points[i].inlineUs; i--) winsFrom = i;
  const largest = points[points.length - 1];
  const figures: Figure[] = [
    {
      name: `HashPool round trip, 1-block batch (${threads} threads)`,
      value: roundTripUs,
      unit: 'us',
      better: 'lower',
      note: 'median latency of hashPrompts with placement "pool"',
    },
    winsFrom >= 0
      ? {
          name: `HashPool beats inline hashing from (${promptTokens}-token prompts, ${threads} threads)`,
          value: points[winsFrom].tokens,
          unit: 'tokens per batch',
          headline: true,
          note: `${points[winsFrom].prompts} prompts; smallest batch from which the pool's median latency stays below inline's`,
        }
      : {
          name: `HashPool beats inline hashing from (${promptTokens}-token prompts, ${threads} threads)`,
          value: Number.NaN,
          unit: 'tokens per batch',
          headline: true,
          note: `not within the sizes measured (up to ${formatCount(largest.tokens)} tokens); the pool's gain is an unblocked event loop`,
        },
    {
      name: `Batch of ${formatCount(largest.tokens)} tokens: pool latency`,
      value: largest.poolUs / 1000,
      unit: 'ms',
      reference: { name: 'inline on the calling thread', value: largest.inlineUs / 1000 },
      better: 'lower',
    },
  ];
  const rows = ['| Batch | tokens | inline | pool | pool / inline |', '|---|---|---|---|---|'];
  for (const p of points) {
    rows.push(`| ${p.prompts} × ${promptTokens} | ${formatCount(p.tokens)} | ${formatNumber(p.inlineUs)} us | ${formatNumber(p.poolUs)} us | ${formatNumber(p.poolUs / p.inlineUs)} |`);
  }
  const chart = lineChart({
    title: `hashPrompts latency: inline vs Piscina pool (${threads} threads)`,
    xLabel: 'tokens per batch (log scale)',
    yLabel: 'latency per batch, us (log scale)',
    logX: true,
    logY: true,
    markers: true,
    series: [
      { name: 'inline', points: points.map((p) => [p.tokens, p.inlineUs]) },
      { name: 'pool', points: points.map((p) => [p.tokens, p.poolUs]) },
    ],
  });
  return { figures, chart: { name: 'pool-crossover', title: 'Pool vs inline crossover', svg: chart }, table: rows.join('\n'), points };
}

export const suite: BenchSuite = {
  name: 'hashing',
  title: 'Block hashing (native core)',
  order: 10,
  async run(ctx: BenchContext): Promise<SuiteResult> {
    const tp = await throughput(ctx);
    const seq = sequenceHashing(ctx);
    // Per-call latency of the 8k case, for the record (p99 shows GC and scheduling noise).
    ctx.progress('computeBlockHashes per-call latency, 8k tokens');
    const p8k = promptOf(8192, 5);
    const lat = summarize(sampleCalls(() => computeBlockHashes(p8k, BLOCK_SIZE), { samples: ctx.quick ? 2000 : 20000, maxMs: ctx.quick ? 1000 : 5000 }).perCallNs);
    const latency: Figure = { name: 'computeBlockHashes p99 latency, 8k-token prompt', value: lat.p99 / 1000, unit: 'us', better: 'lower', note: `p50 ${formatNumber(lat.p50 / 1000)} us` };
    const co = await crossover(ctx);
    return {
      figures: [...tp.figures, seq, latency, ...co.figures],
      sections: [
        {
          title: 'Throughput',
          markdown: `computeBlockHashes over prompts of random token ids, block size ${BLOCK_SIZE}, on the calling thread, through the public TypeScript API (argument checks included). The reference is bench/reference/xxh3.ts, a plain TypeScript XXH3-64 verified against the addon by test/bench/xxh3-reference.test.ts. Rates are medians of rounds in which native and reference take turns.\n\n${tp.table}`,
        },
        {
          title: 'Bulk hashing: pool vs inline',
          markdown: `HashPool.hashPrompts with the placement forced, batches of 2048-token prompts; the pool splits a batch across its threads over a shared token buffer. Medians of alternating runs. Below the crossover a batch is hashed inline (HashPool's default threshold, DEFAULT_POOL_THRESHOLD_TOKENS, comes from this measurement).\n\n${co.table}`,
        },
      ],
      charts: [tp.chart, co.chart],
      data: { blockSize: BLOCK_SIZE, crossover: co.points },
    };
  },
};
