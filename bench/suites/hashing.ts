// Block hashing: throughput of computeBlockHashes (one core, the public API with its argument
// checks) next to the plain TypeScript XXH3 reference, and where the Piscina pool starts to beat
// hashing inline.
import { computeBlockHashes, computeSequenceHashes } from '../../src/core/hashing.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { crossover } from '../hashing/crossover.js';
import { promptOf } from '../hashing/prompts.js';
import { median, summarize } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Chart, Figure, SuiteResult } from '../lib/suite.js';
import { barChart } from '../lib/svg.js';
import { interleavedRates, sampleCalls } from '../lib/timer.js';
import { blockHashesReference, sequenceHashesReference } from '../reference/xxh3.js';

const BLOCK_SIZE = 16;
const GB = 1e9;

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
      note: `one core, median of ${rates.native.length} rounds taking turns with the reference (best ${formatNumber(Math.max(...rates.native) / GB)} GB/s); 4 bytes per token`,
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
          markdown: `HashPool.hashPrompts with the placement forced, batches of 2048-token prompts: latency, and how long the call kept the calling thread's event loop busy (event-loop utilisation; the pool's reason to exist). The pool splits a batch across its threads over a shared token buffer; both placements first copy small prompts into one batch. Medians of alternating runs. HashPool's default threshold (DEFAULT_POOL_THRESHOLD_TOKENS) comes from this measurement.\n\n${co.table}`,
        },
      ],
      charts: [tp.chart, ...co.charts],
      data: { blockSize: BLOCK_SIZE, crossover: co.points },
    };
  },
};
