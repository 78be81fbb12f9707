import { KvIndexer } from '../../src/core/indexer.js';
import {
  BLOCK_SIZE,
  documentCount,
  DOC_BLOCKS,
  EVENT_BLOCKS,
  FULL_DOCS_PER_WORKER,
  QUERIES,
  queryHashes,
  queryTokens,
  QUICK_DOCS_PER_WORKER,
  removedEvents,
  storedEvents,
  SYSTEM_BLOCKS,
  SYSTEM_PROMPTS,
  WORKERS,
} from '../indexer/workload.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { median, summarize, type Summary } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';
import { barChart, cdfChart } from '../lib/svg.js';
import { gcAndSettle } from '../lib/gc-settle.js';
import { sampleCalls } from '../lib/timer.js';
import { chainPayload, decodeOrThrow, EVENTS_PER_BATCH, removedPayloads, storedPayloads, worstStallMs, type Payload } from '../indexer/payloads.js';
import { ReferenceIndexer } from '../reference/indexer.js';

/** The stall measurement's batch: chained stored events of one block. */
const STALL_EVENTS = 100_000;
const STALL_ROUNDS = 7;

interface Sizes {
  docsPerWorker: number;
  nativeSamples: number;
  referenceSamples: number;
}
// The workload (bench/indexer/workload.ts): ~1.04M indexed (worker, block) entries at full size.
const FULL: Sizes = { docsPerWorker: FULL_DOCS_PER_WORKER, nativeSamples: 30_000, referenceSamples: 4_000 };
const QUICK: Sizes = { docsPerWorker: QUICK_DOCS_PER_WORKER, nativeSamples: 4_000, referenceSamples: 600 };

type Indexer = Pick<ReferenceIndexer, 'applyStored' | 'applyRemoved'> & {
  findMatches(local: BigUint64Array): Array<{ worker: number; dpRank: number; blocks: number }>;
};

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function timeEvents(apply: () => number): { seconds: number; applied: number } {
  const t0 = performance.now();
  const applied = apply();
  return { seconds: (performance.now() - t0) / 1000, applied };
}

function latency(index: Indexer, qs: BigUint64Array[], samples: number): Float64Array {
  return sampleCalls((i) => index.findMatches(qs[i % qs.length]), { samples, warmup: Math.min(500, samples), batch: 1 }).perCallNs;
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const sizes = ctx.quick ? QUICK : FULL;
  const docs = documentCount(sizes.docsPerWorker);
  ctx.progress(`preparing events: ${WORKERS} workers x ${sizes.docsPerWorker} documents of ${DOC_BLOCKS} blocks`);
  const stored = storedEvents(sizes.docsPerWorker);
  const qs = queryHashes(queryTokens(docs));

  const storedBatches = storedPayloads(stored);
  const applyNative = (index: KvIndexer, payloads: Payload[], kind: 'stored' | 'removed') => () => {
    let ok = 0;
    for (const p of payloads) {
      const r = index.applyEventBatch(p.worker, 0, p.bytes);
      ok += r[kind];
      if (r.refused.unknownRemoval > 0) throw new Error('removed blocks unknown to the index');
    }
    if (ok !== payloads.reduce((n, p) => n + p.events, 0)) throw new Error(`some ${kind} events were not applied`);
    return ok;
  };
  const applyReference = (index: ReferenceIndexer, payloads: Payload[]) => () => {
    let ok = 0;
    for (const p of payloads) {
      for (const e of decodeOrThrow(p.bytes).events) {
        if (e.kind === 'stored') ok += index.applyStored(p.worker, 0, e.parentHash, e.blockHashes, e.tokenIds) ? 1 : 0;
        else if (e.kind === 'removed') {
          index.applyRemoved(p.worker, 0, e.blockHashes);
          ok++;
        }
      }
    }
    return ok;
  };

  ctx.progress(`native: applying ${formatCount(stored.length)} stored events from ${formatCount(storedBatches.length)} payloads`);
  gc();
  const native = new KvIndexer({ blockSize: BLOCK_SIZE });
  const nativeStore = timeEvents(applyNative(native, storedBatches, 'stored'));
  const ns = native.stats();

  ctx.progress(`reference: decoding and applying ${formatCount(stored.length)} stored events`);
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const reference = new ReferenceIndexer(BLOCK_SIZE);
  const refStore = timeEvents(applyReference(reference, storedBatches));
  gc();
  const refBytesPerBlock = (process.memoryUsage().heapUsed - heapBefore) / reference.stats().blocks;
  if (reference.stats().blocks !== ns.blocks) throw new Error(`the reference indexed ${reference.stats().blocks} blocks, the native ${ns.blocks}`);

  ctx.progress('checking both indexers agree on every query');
  let matchedWorkers = 0;
  for (const q of qs) {
    const a = native.findMatches(q);
    if (JSON.stringify(a) !== JSON.stringify(reference.findMatches(q))) throw new Error('native and reference findMatches disagree');
    matchedWorkers += a.length;
  }

  ctx.progress(`findMatches latency, ${QUERIES} prompts of 8k tokens`);
  const nativeNs: Float64Array[] = [];
  const refNs: Float64Array[] = [];
  // Two alternating rounds each, so both see the same background noise; each starts once the
  // GC's helper threads have finished sweeping the reference's heap (bench/lib/gc-settle.ts).
  for (let round = 0; round < 2; round++) {
    await gcAndSettle();
    nativeNs.push(latency(native, qs, sizes.nativeSamples / 2));
    await gcAndSettle();
    refNs.push(latency(reference, qs, sizes.referenceSamples / 2));
  }
  const natUs = Float64Array.from([...nativeNs[0], ...nativeNs[1]]).map((x) => x / 1000);
  const refUs = Float64Array.from([...refNs[0], ...refNs[1]]).map((x) => x / 1000);
  const nat = summarize(natUs);
  const ref = summarize(refUs);
  await gcAndSettle();
  const earlyUs = sampleCalls((i) => native.findMatches(qs[i % qs.length], { earlyExit: true }), { samples: sizes.nativeSamples / 2, batch: 1 }).perCallNs.map(
    (x) => x / 1000,
  );
  const early = summarize(earlyUs);

  const removed = removedEvents(sizes.docsPerWorker);
  ctx.progress(`applying ${formatCount(removed.length)} removed events`);
  const removedBatches = removedPayloads(removed);
  const nativeRemove = timeEvents(applyNative(native, removedBatches, 'removed'));
  const refRemove = timeEvents(applyReference(reference, removedBatches));

  ctx.progress(`the event loop while a ${formatCount(STALL_EVENTS)}-event batch applies`);
  const stallPayload = chainPayload(ctx.quick ? STALL_EVENTS / 10 : STALL_EVENTS, BLOCK_SIZE);
  const stallIndex = () => new KvIndexer({ blockSize: BLOCK_SIZE });
  // Rounds, each a fresh index, alternating with the same ticker idle: one shot is at the mercy
  // of the machine (the idle ticker alone moves by several ms on a shared one); the figure is the
  // median round.
  const asyncStalls: number[] = [];
  const idleStalls: number[] = [];
  // Every round's index stays alive until the rounds end: a dropped one's native tree is freed by
  // its finalizer on the main thread, inside a later round's window (about 8 ms for 100k blocks).
  const asyncIndexes: KvIndexer[] = [];
  for (let round = 0; round < STALL_ROUNDS; round++) {
    gc();
    // The machine's own: the same ticker while nothing runs (a loaded machine deschedules it too).
    // It runs between the forced GC and the batch: V8 sweeps the big heap this process holds (the
    // workload's indexes) on helper threads after a full GC, which took one of the two cores from
    // the main thread and the apply thread (whole 4 ms ticks) when the batch started at once.
    idleStalls.push(await worstStallMs(() => new Promise((resolve) => setTimeout(resolve, 300))));
    const asyncIndex = stallIndex();
    asyncIndexes.push(asyncIndex);
    // In place, as the router's event ingestion applies the messages it receives (src/events/apply.ts).
    asyncStalls.push(await worstStallMs(() => asyncIndex.applyEventBatchAsync(1, 0, stallPayload, { inPlace: true })));
  }
  const stallAsync = median(asyncStalls);
  const stallIdle = median(idleStalls);
  gc();
  const syncIndex = stallIndex();
  const stallSync = await worstStallMs(() => syncIndex.applyEventBatch(1, 0, stallPayload));
  // Before: the payload decoded whole by the TypeScript decoder (one blocking call), then applied.
  const stallTsDecode = await worstStallMs(() => decodeOrThrow(stallPayload));
  if (asyncIndexes.some((index) => index.stats().blocks !== syncIndex.stats().blocks)) throw new Error('async and sync batches applied differently');

  const setting = `${WORKERS} workers, ${formatNumber(ns.blocks)} blocks`;
  const rate = (r: { seconds: number; applied: number }) => r.applied / r.seconds;
  const figures: Figure[] = [
    {
      name: `findMatches p50, 8k-token prompt, ${setting}`,
      value: nat.p50,
      unit: 'us',
      reference: { name: 'plain TS radix tree', value: ref.p50 },
      target: { op: '<=', value: 1 },
    },
    {
      name: `findMatches p99, 8k-token prompt, ${setting}`,
      value: nat.p99,
      unit: 'us',
      reference: { name: 'plain TS radix tree', value: ref.p99 },
      target: { op: '<=', value: 2.4 },
      headline: true,
    },
    {
      name: `findMatches p99 with earlyExit, 8k-token prompt, ${setting}`,
      value: early.p99,
      unit: 'us',
      better: 'lower',
      note: `p50 ${formatNumber(early.p50)} us`,
    },
    {
      name: `stored events applied per second from payload bytes (${EVENT_BLOCKS} blocks each, ${EVENTS_PER_BATCH} per batch; decoding and hashing included)`,
      value: rate(nativeStore),
      unit: 'events/s',
      reference: { name: 'TS decoder + plain TS radix tree + TS XXH3', value: rate(refStore) },
      target: { op: '>=', value: 935_000 },
      headline: true,
      note: `${formatNumber((rate(nativeStore) * EVENT_BLOCKS) / 1e6)}M blocks/s; building the whole index once`,
    },
    {
      name: `removed events applied per second from payload bytes (${EVENT_BLOCKS} blocks each)`,
      value: rate(nativeRemove),
      unit: 'events/s',
      reference: { name: 'TS decoder + plain TS radix tree', value: rate(refRemove) },
      target: { op: '>=', value: 525_000 },
    },
    {
      name: `worst event-loop stall while a ${formatCount(stallPayload.length > 0 ? (ctx.quick ? STALL_EVENTS / 10 : STALL_EVENTS) : 0)}-event batch applies (applyEventBatchAsync), median of ${STALL_ROUNDS} rounds`,
      value: stallAsync,
      unit: 'ms',
      reference: { name: 'the same batch applied synchronously (applyEventBatch)', value: stallSync },
      target: { op: '<=', value: 5 },
      headline: true,
      note: `${formatNumber(stallPayload.length / 2 ** 20)} MiB payload; decoding it whole with the TypeScript decoder alone stalls ${formatNumber(stallTsDecode)} ms; the same ticker idle for 300 ms, median of the rounds between: ${formatNumber(stallIdle)} ms; rounds ${asyncStalls.map((v) => formatNumber(v)).join(', ')} ms`,
    },
    {
      name: `bytes per indexed block (${setting})`,
      value: ns.bytesPerBlock,
      unit: 'bytes',
      reference: { name: 'plain TS radix tree, heap growth', value: refBytesPerBlock },
      target: { op: '<=', value: 42.5 },
      headline: true,
      note: `native: stats().approxBytes ${formatNumber(ns.approxBytes / 2 ** 20)} MiB for ${formatCount(ns.blocks)} blocks, ${formatCount(ns.nodes)} distinct blocks on ${formatCount(ns.edges)} edges`,
    },
  ];
  const table = (label: string, s: Summary) =>
    `| ${label} | ${formatNumber(s.p50)} | ${formatNumber(s.p90)} | ${formatNumber(s.p99)} | ${formatNumber(s.max)} | ${s.n} |`;
  const markdown = [
    `${WORKERS} workers each hold ${sizes.docsPerWorker} documents of ${DOC_BLOCKS} blocks (block size ${BLOCK_SIZE}), every document on two`,
    `workers, all starting with one of ${SYSTEM_PROMPTS} shared ${SYSTEM_BLOCKS}-block system prompts: ${formatCount(ns.blocks)} indexed (worker, block)`,
    `entries over ${formatCount(ns.nodes)} distinct blocks, indexed through ${formatCount(stored.length)} BlockStored events of ${EVENT_BLOCKS} blocks,`,
    `${EVENTS_PER_BATCH} events to a msgpack payload as an engine publishes them: the native index decodes, hashes and applies them`,
    '(KvIndexer.applyEventBatch); the reference decodes them with the TypeScript decoder (src/events/decode.ts) first.',
    `Queries: ${QUERIES} prompts of 8k tokens (a cached document, one diverging half way, one new after its system prompt),`,
    `matching ${formatNumber(matchedWorkers / QUERIES)} workers on average; both indexers return identical matches (checked first).`,
    'Per-call latency (clock cost subtracted), the native and reference measured in alternating rounds. The reference',
    "memory is the V8 heap's growth while it indexes (after a full GC).",
    '',
    '| findMatches, us | p50 | p90 | p99 | max | samples |',
    '|---|---|---|---|---|---|',
    table('native KvIndexer', nat),
    table('native, earlyExit', early),
    table('plain TS reference', ref),
  ].join('\n');
  return {
    figures,
    sections: [{ title: 'Workload', markdown }],
    charts: [
      {
        name: 'find-matches-cdf',
        title: 'findMatches latency distribution',
        svg: cdfChart({
          title: `findMatches, 8k-token prompts, ${setting}`,
          xLabel: 'latency per call, us (log scale)',
          logX: true,
          series: [
            { name: 'native', values: natUs },
            { name: 'native, earlyExit', values: earlyUs, dashed: true },
            { name: 'plain TS reference', values: refUs },
          ],
        }),
      },
      {
        name: 'events',
        title: 'Events applied per second',
        svg: barChart({
          title: `KV events applied per second (${EVENT_BLOCKS} blocks per event)`,
          categories: ['BlockStored', 'BlockRemoved'],
          series: [
            { name: 'native KvIndexer', values: [rate(nativeStore), rate(nativeRemove)] },
            { name: 'plain TS reference', values: [rate(refStore), rate(refRemove)] },
          ],
          yLabel: 'events per second (log scale)',
          logY: true,
        }),
      },
    ],
    data: { blocks: ns.blocks, nodes: ns.nodes, native: { findMatchesUs: nat, earlyExitUs: early }, reference: { findMatchesUs: ref } },
  };
}

export const suite: BenchSuite = { name: 'indexer', title: 'KV indexer (native core)', order: 20, run };
