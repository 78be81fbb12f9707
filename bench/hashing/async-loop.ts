// Whether the event loop stays free while a large prompt is hashed: computeBlockHashes (on the
// calling thread) against computeBlockHashesAsync (a napi AsyncTask on a libuv thread). While
// each call runs, a chain of setImmediate callbacks times every turn of the event loop; the
// figure is the median gap between two turns (the longest one is kept too, but on a shared
// 2-core machine it mostly measures the scheduler taking the core away). Alternating rounds, medians.
import { computeBlockHashes, computeBlockHashesAsync } from '../../src/core/hashing.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { median } from '../lib/stats.js';
import type { BenchContext, Figure } from '../lib/suite.js';
import { promptOf } from './prompts.js';

const BLOCK_SIZE = 16;

interface LoopRound {
  /** Wall time of the call, from start to its result. */
  wallMs: number;
  /** Median and longest time between two turns of the event loop while the call ran. */
  medianGapMs: number;
  maxGapMs: number;
  /** Turns of the event loop while the call ran. */
  turns: number;
}

async function measure(call: () => Promise<unknown>): Promise<LoopRound> {
  let running = true;
  let last = 0;
  const gaps: number[] = [];
  const turn = () => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (running) setImmediate(turn);
  };
  await new Promise<void>((resolve) => setImmediate(resolve));
  last = performance.now();
  setImmediate(turn);
  const start = performance.now();
  await call();
  const wallMs = performance.now() - start;
  running = false;
  // The gap that ends with the call's own return counts too.
  turn();
  return { wallMs, medianGapMs: median(gaps), maxGapMs: Math.max(...gaps), turns: gaps.length };
}

export async function asyncLoop(ctx: BenchContext): Promise<{ figures: Figure[]; table: string }> {
  const tokens = ctx.quick ? 1 << 22 : 1 << 24;
  const rounds = ctx.quick ? 5 : 11;
  ctx.progress(`event loop while hashing a ${formatCount(tokens)}-token prompt, sync vs async`);
  const prompt = promptOf(tokens, 11);
  const sync: LoopRound[] = [];
  const async: LoopRound[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first, so drift in the machine's load hits both alike.
    const pair = [
      () => measure(async () => computeBlockHashes(prompt, BLOCK_SIZE)).then((m) => sync.push(m)),
      () => measure(() => computeBlockHashesAsync(prompt, BLOCK_SIZE)).then((m) => async.push(m)),
    ];
    for (const run of r % 2 === 0 ? pair : pair.reverse()) await run();
  }
  const med = (xs: LoopRound[], k: keyof LoopRound) => median(xs.map((x) => x[k]));
  const mb = (tokens * 4) / 1e6;
  const figures: Figure[] = [
    {
      name: `event-loop gap (median between two turns) while hashing a ${formatCount(tokens)}-token prompt, computeBlockHashesAsync`,
      value: med(async, 'medianGapMs'),
      unit: 'ms',
      better: 'lower',
      reference: { name: 'computeBlockHashes (sync: the loop waits for the whole call)', value: med(sync, 'medianGapMs') },
      note: `${formatNumber(med(async, 'turns'))} turns of the loop during the async call (sync: ${formatNumber(med(sync, 'turns'))}); wall ${formatNumber(med(async, 'wallMs'))} ms async vs ${formatNumber(med(sync, 'wallMs'))} ms sync`,
      headline: true,
    },
  ];
  const row = (name: string, xs: LoopRound[]) =>
    `| ${name} | ${formatNumber(med(xs, 'wallMs'))} | ${formatNumber(med(xs, 'medianGapMs'))} | ${formatNumber(med(xs, 'maxGapMs'))} | ${formatNumber(med(xs, 'turns'))} |`;
  const table = [
    `${formatCount(tokens)} tokens (${formatNumber(mb)} MB), block size ${BLOCK_SIZE}, medians of ${rounds} alternating rounds:`,
    '',
    '| call | wall ms | event-loop gap, median ms | longest gap ms | loop turns during the call |',
    '|---|---:|---:|---:|---:|',
    row('computeBlockHashes (sync)', sync),
    row('computeBlockHashesAsync (napi AsyncTask)', async),
  ].join('\n');
  return { figures, table };
}
