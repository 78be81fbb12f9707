// Block hashing: throughput of computeBlockHashes (one core, the public API with its argument
// checks) next to the plain TypeScript XXH3 reference, and where the Piscina pool starts to beat
// hashing inline.
import { native } from '../../src/core/binding.js';
import { blockHashSeed, computeBlockHashes, computeSequenceHashes } from '../../src/core/hashing.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { asyncLoop } from '../hashing/async-loop.js';
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
  const rows: string[] = ['| Prompt | computeBlockHashes | kernel, reused output | plain TS reference | API vs reference |', '|---|---|---|---|---|'];
  const gbs: Record<'api' | 'kernel' | 'reference', number[]> = { api: [], kernel: [], reference: [] };
  const seed = blockHashSeed();
  for (const tokens of sizes) {
    ctx.progress(`computeBlockHashes throughput, ${formatCount(tokens)}-token prompts`);
    const prompts = Array.from({ length: 8 }, (_, i) => promptOf(tokens, i));
    const bytes = tokens * 4;
    const out = new BigUint64Array(tokens / BLOCK_SIZE);
    const outOffsets = new Uint32Array(2);
    const whole = Uint32Array.of(0, tokens);
    let k = 0;
    const rates = await interleavedRates(
      {
        api: () => (computeBlockHashes(prompts[k++ & 7], BLOCK_SIZE), bytes),
        // The same hashing written into a buffer JavaScript allocated once: the addon's own speed.
        kernel: () => (native.computeBlockHashesBatchInto(prompts[k++ & 7], whole, BLOCK_SIZE, seed, out, outOffsets), bytes),
        reference: () => (blockHashesReference(prompts[k++ & 7], BLOCK_SIZE), bytes),
      },
      { rounds: ctx.quick ? 4 : 24, minMsPerRound: ctx.quick ? 40 : 80 },
    );
    const m = { api: median(rates.api) / GB, kernel: median(rates.kernel) / GB, reference: median(rates.reference) / GB };
    for (const key of ['api', 'kernel', 'reference'] as const) gbs[key].push(m[key]);
    rows.push(
      `| ${formatCount(tokens)} tokens | ${formatNumber(m.api)} GB/s | ${formatNumber(m.kernel)} GB/s | ${formatNumber(m.reference)} GB/s | ${formatNumber(m.api / m.reference)}× |`,
    );
    figures.push({
      name: `computeBlockHashes throughput, ${tokens / 1024}k-token prompt (block ${BLOCK_SIZE})`,
      value: m.api,
      unit: 'GB/s',
      reference: { name: 'plain TS XXH3', value: m.reference },
      target: { op: '>=', value: 5 },
      headline: tokens === 8192,
      note: `one core, median of ${rates.api.length} rounds taking turns with the reference (best ${formatNumber(Math.max(...rates.api) / GB)} GB/s); 4 bytes per token`,
    });
    figures.push({
      name: `hashing kernel throughput, ${tokens / 1024}k-token prompt (output buffer reused)`,
      value: m.kernel,
      unit: 'GB/s',
      reference: { name: 'plain TS XXH3', value: m.reference },
      target: { op: '>=', value: 5 },
      note: 'computeBlockHashesBatchInto: no result allocation; bounds what the public API can reach',
    });
  }
  const chart = barChart({
    title: `Block hashing throughput (block size ${BLOCK_SIZE}, one core)`,
    categories: sizes.map((t) => `${t / 1024}k tokens`),
    series: [
      { name: 'computeBlockHashes', values: gbs.api },
      { name: 'kernel, reused output', values: gbs.kernel },
      { name: 'plain TS XXH3', values: gbs.reference },
    ],
    yLabel: 'GB/s (log scale)',
    logY: true,
  });
  return { figures, chart: { name: 'throughput', title: 'Block hashing throughput', svg: chart }, table: rows.join('\n') };
}

async function sequenceHashing(ctx: BenchContext): Promise<Figure> {
  ctx.progress('computeSequenceHashes, 512 blocks');
  const local = computeBlockHashes(promptOf(8192, 99), BLOCK_SIZE);
  const blocks = local.length;
  const rates = await interleavedRates(
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
    const seq = await sequenceHashing(ctx);
    // Per-call latency of the 8k case, for the record (p99 shows GC and scheduling noise).
    ctx.progress('computeBlockHashes per-call latency, 8k tokens');
    const p8k = promptOf(8192, 5);
    const lat = summarize(
      sampleCalls(() => computeBlockHashes(p8k, BLOCK_SIZE), { samples: ctx.quick ? 2000 : 20000, maxMs: ctx.quick ? 1000 : 5000 }).perCallNs,
    );
    const latency: Figure = {
      name: 'computeBlockHashes p99 latency, 8k-token prompt',
      value: lat.p99 / 1000,
      unit: 'us',
      better: 'lower',
      note: `p50 ${formatNumber(lat.p50 / 1000)} us`,
    };
    const co = await crossover(ctx);
    const loop = await asyncLoop(ctx);
    return {
      figures: [...tp.figures, seq, latency, ...co.figures, ...loop.figures],
      sections: [
        {
          title: 'Throughput',
          markdown: `computeBlockHashes over prompts of random token ids, block size ${BLOCK_SIZE}, on the calling thread, through the public TypeScript API (argument checks included); next to it the same hashing written into an output buffer allocated once (the addon's kernel, computeBlockHashesBatchInto), which shows what the per-call costs add: argument checks, the seed, and the result array (small ones carved from a shared slab, src/core/result-slab.ts) filled natively (no N-API external buffer, whose memory would be released only when the event loop turns). The reference is bench/reference/xxh3.ts, a plain TypeScript XXH3-64 verified against the addon by test/bench/xxh3-reference.test.ts. Rates are medians of short rounds in which the candidates take turns, the event loop turning in between.\n\n${tp.table}`,
        },
        {
          title: 'Bulk hashing: pool vs inline',
          markdown: `HashPool.hashPrompts with the placement forced, batches of 2048-token prompts: latency, and how long the call kept the calling thread's event loop busy (event-loop utilisation; the pool's reason to exist). The pool splits a batch across its threads over a shared token buffer; both placements first copy small prompts into one batch. Medians of alternating runs. HashPool's default threshold (DEFAULT_POOL_THRESHOLD_TOKENS) comes from this measurement.\n\n${co.table}`,
        },
        {
          title: 'Async hashing and the event loop',
          markdown: `computeBlockHashesAsync runs the same hashing as a napi-rs AsyncTask on a libuv thread: the call returns a promise at once and the event loop keeps turning. While each call runs, a chain of setImmediate callbacks records the longest gap between two turns of the loop (bench/hashing/async-loop.ts).\n\n${loop.table}`,
        },
      ],
      charts: [tp.chart, ...co.charts],
      data: { blockSize: BLOCK_SIZE, crossover: co.points },
    };
  },
};
