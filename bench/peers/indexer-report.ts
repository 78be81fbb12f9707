// The Dynamo indexer comparison as report figures, a Markdown section and charts: kvroute's
// figures each with the Dynamo indexer it is compared to as the reference (ratios), the targets
// of issue 14 set from Dynamo's figures of the same run.
import { EVENTS_PER_BATCH } from '../indexer/payloads.js';
import { EVENT_BLOCKS, WORKERS } from '../indexer/workload.js';
import { formatCount, formatNumber } from '../lib/format.js';
import { median } from '../lib/stats.js';
import type { Figure, SuiteResult } from '../lib/suite.js';
import { barChart, cdfChart } from '../lib/svg.js';
import type { IndexerComparison } from './indexer-compare.js';
import { rates, summarizeRounds, type RoundsSummary } from './rounds.js';
import { describeScoreCheck } from './scores.js';

const RADIX = 'Dynamo RadixTree (one thread)';
const POOL = 'Dynamo ConcurrentRadixTreeCompressed in its ThreadPoolIndexer';

const usRounds = (rounds: number[][]) => summarizeRounds(rounds.map((r) => r.map((ns) => ns / 1000)));

export function indexerReport(c: IndexerComparison): SuiteResult {
  const blocks = c.kvroute[c.kvroute.length - 1]?.blocks ?? 0;
  const setting = `${WORKERS} workers, ${formatCount(blocks)} blocks, 8k-token queries`;
  const lat = {
    kvroutePublic: usRounds(c.latencyNs.kvroutePublic),
    kvrouteBare: usRounds(c.latencyNs.kvrouteBare),
    radix: usRounds(c.latencyNs.dynamoRadix),
    pool: usRounds(c.latencyNs.dynamoPool),
  };
  const stored = {
    kvroute: rates(
      c.stored,
      c.kvroute.map((r) => r.storedSeconds),
    ),
    radix: rates(
      c.stored,
      c.dynamoBuilt.map((b) => b.radix.seconds),
    ),
    pool: rates(
      c.stored,
      c.dynamoBuilt.map((b) => b.pool.seconds),
    ),
  };
  const removed = {
    kvroute: rates(
      c.removed,
      c.kvroute.map((r) => r.removedSeconds),
    ),
    radix: rates(
      c.removed,
      c.dynamoRemoved.map((b) => b.radix.seconds),
    ),
    pool: rates(
      c.removed,
      c.dynamoRemoved.map((b) => b.pool.seconds),
    ),
  };
  const bytesPerBlock = {
    kvroute: median(c.kvroute.map((r) => r.approxBytes / r.blocks)),
    radix: median(c.dynamoBuilt.map((b) => b.radix.heap_bytes / b.radix.blocks)),
    pool: median(c.dynamoBuilt.map((b) => b.pool.heap_bytes / b.pool.blocks)),
  };
  const hash = { kvroute: summarizeRounds([c.hashNs.kvroute.map((x) => x / 1000)]), dynamo: summarizeRounds([c.hashNs.dynamo.map((x) => x / 1000)]) };
  const differing = c.scoreChecks.reduce((n, s) => n + s.differing, 0);
  const rejected =
    c.dynamoBuilt.reduce((n, b) => n + b.radix.rejected + b.pool.rejected, 0) + c.dynamoRemoved.reduce((n, b) => n + b.radix.rejected + b.pool.rejected, 0);

  const roundsNote = (s: RoundsSummary, p: 'p50' | 'p99') =>
    `median of ${s.roundP50.length} alternating rounds (${(p === 'p50' ? s.roundP50 : s.roundP99).map(formatNumber).join(', ')} us)`;
  const latencyFigure = (
    p: 'p50' | 'p99',
    who: string,
    ours: RoundsSummary,
    refName: string,
    ref: RoundsSummary,
    target: boolean,
    headline = false,
  ): Figure => ({
    name: `find_matches ${p}, ${who} vs ${refName}, ${setting}`,
    value: ours[p],
    unit: 'us',
    reference: { name: refName, value: ref[p] },
    better: 'lower',
    ...(target ? { target: { op: '<=' as const, value: ref[p] } } : {}),
    headline,
    note: roundsNote(ours, p),
  });
  const figures: Figure[] = [
    {
      name: 'queries whose overlap scores differ between kvroute and Dynamo (every query, both Dynamo indexers, before and after the removals)',
      value: differing,
      unit: '',
      target: { op: '<=', value: 0 },
      headline: true,
      note:
        differing === 0
          ? `identical on all ${c.queries} queries; Dynamo hashed all ${formatCount(c.ready.hash_check.blocks)} blocks as kvroute did`
          : c.scoreChecks
              .filter((s) => s.differing > 0)
              .map(describeScoreCheck)
              .join(' / '),
    },
    {
      name: 'blocks Dynamo hashes differently from kvroute (compute_block_hash_for_seq vs computeBlockHashes, every event and query)',
      value: c.ready.hash_check.mismatches,
      unit: '',
      target: { op: '<=', value: 0 },
    },
    latencyFigure('p50', 'kvroute KvIndexer.findMatches (public API)', lat.kvroutePublic, POOL, lat.pool, true, true),
    latencyFigure('p99', 'kvroute KvIndexer.findMatches (public API)', lat.kvroutePublic, POOL, lat.pool, true, true),
    latencyFigure('p50', 'kvroute KvIndexer.findMatches (public API)', lat.kvroutePublic, RADIX, lat.radix, false),
    latencyFigure('p99', 'kvroute KvIndexer.findMatches (public API)', lat.kvroutePublic, RADIX, lat.radix, false),
    latencyFigure('p50', 'kvroute bare addon call', lat.kvrouteBare, POOL, lat.pool, false),
    latencyFigure('p99', 'kvroute bare addon call', lat.kvrouteBare, POOL, lat.pool, false),
    {
      name: `stored events applied per second (${EVENT_BLOCKS} blocks each), kvroute applyStored (hashes the tokens) vs ${RADIX} (handed the hashes)`,
      value: stored.kvroute.median,
      unit: 'events/s',
      reference: { name: RADIX, value: stored.radix.median },
      better: 'higher',
      headline: true,
      note: `rounds: kvroute ${stored.kvroute.rounds.map(formatNumber).join(', ')}; Dynamo ${stored.radix.rounds.map(formatNumber).join(', ')}`,
    },
    {
      name: `stored events applied per second, kvroute applyStored vs ${POOL} (4 event threads)`,
      value: stored.kvroute.median,
      unit: 'events/s',
      reference: { name: POOL, value: stored.pool.median },
      better: 'higher',
      note: `Dynamo rounds ${stored.pool.rounds.map(formatNumber).join(', ')}: enqueued, then a flush of every event thread`,
    },
    {
      name: `removed events applied per second (${EVENT_BLOCKS} blocks each), kvroute applyRemoved vs ${RADIX}`,
      value: removed.kvroute.median,
      unit: 'events/s',
      reference: { name: RADIX, value: removed.radix.median },
      target: { op: '>=', value: removed.radix.median },
      headline: true,
      note: `rounds: kvroute ${removed.kvroute.rounds.map(formatNumber).join(', ')}; Dynamo ${removed.radix.rounds.map(formatNumber).join(', ')}`,
    },
    {
      name: `removed events applied per second, kvroute applyRemoved vs ${POOL}`,
      value: removed.kvroute.median,
      unit: 'events/s',
      reference: { name: POOL, value: removed.pool.median },
      better: 'higher',
    },
    ...eventBatchFigures(c, stored.radix.median, removed.radix.median),
    {
      name: `bytes per indexed block, kvroute (stats().approxBytes) vs ${RADIX} (heap growth)`,
      value: bytesPerBlock.kvroute,
      unit: 'bytes',
      reference: { name: RADIX, value: bytesPerBlock.radix },
      better: 'lower',
      headline: true,
    },
    {
      name: `bytes per indexed block, kvroute vs ${POOL} (heap growth)`,
      value: bytesPerBlock.kvroute,
      unit: 'bytes',
      reference: { name: POOL, value: bytesPerBlock.pool },
      better: 'lower',
    },
    {
      name: `hashing an ${c.hashNs.tokens}-token query, p50: kvroute computeBlockHashes vs Dynamo compute_block_hash_for_seq`,
      value: hash.kvroute.p50,
      unit: 'us',
      reference: { name: 'Dynamo compute_block_hash_for_seq', value: hash.dynamo.p50 },
      better: 'lower',
    },
  ];

  const row = (name: string, s: RoundsSummary) =>
    `| ${name} | ${formatNumber(s.p50)} | ${formatNumber(s.p90)} | ${formatNumber(s.p99)} | ${s.roundP99.map(formatNumber).join(', ')} | ${formatNumber(s.pooled.p50)} / ${formatNumber(s.pooled.p99)} | ${s.pooled.n} |`;
  const markdown = [
    `The indexer suite's workload (bench/indexer/workload.ts): ${WORKERS} workers, ${formatCount(blocks)} (worker, block) entries stored by`,
    `${formatCount(c.stored)} BlockStored events of ${EVENT_BLOCKS} blocks, ${formatCount(c.removed)} BlockRemoved events, ${c.queries} queries of 512 blocks (8k tokens).`,
    'Generated once in TypeScript and handed to the peer as a binary file (bench/peers/workload-file.ts): engine block hashes, parents,',
    "tokens, and each block's local hash by kvroute's computeBlockHashes (Dynamo's indexers are handed those hashes; kvroute's",
    `hashes the tokens itself). The peer is ${c.ready.crate} from crates.io, built with kvroute's release profile`,
    `(bench/peers/dynamo-indexer/); its ThreadPoolIndexer runs ${c.ready.event_threads} event threads (its default) and answers find_matches`,
    "inline on the caller's thread, through KvIndexerInterface::find_matches (the router's call; the Vec it consumes is copied",
    'outside the timed region). Both sides build from empty in each round, who goes first alternating; latency rounds alternate',
    "the same way on the last build (per-call samples, clock cost subtracted on both sides). Memory: kvroute's own accounting",
    '(allocated capacity); Dynamo: growth of the heap in use (glibc mallinfo2) while it builds, its event queues included.',
    '',
    `**Overlap scores**: ${c.scoreChecks.map(describeScoreCheck).join('; ')}.`,
    `**Hashing**: Dynamo's compute_block_hash_for_seq gave ${c.ready.hash_check.mismatches === 0 ? 'the same hash as kvroute for all' : `a different hash for ${c.ready.hash_check.mismatches} of`} ${formatCount(c.ready.hash_check.blocks)} blocks.`,
    rejected > 0 ? `**Dynamo refused ${rejected} events** (see the rounds below).` : 'Dynamo accepted every event.',
    '',
    '| find_matches, us | p50 | p90 | p99 | p99 per round | pooled p50 / p99 | samples |',
    '|---|---|---|---|---|---|---|',
    row('kvroute KvIndexer.findMatches (public API)', lat.kvroutePublic),
    row('kvroute bare addon call', lat.kvrouteBare),
    row(RADIX, lat.radix),
    row(POOL, lat.pool),
    '',
    '| events per second (median of rounds) | stored | removed | bytes per block |',
    '|---|---|---|---|',
    `| kvroute applyStored / applyRemoved | ${formatNumber(stored.kvroute.median)} | ${formatNumber(removed.kvroute.median)} | ${formatNumber(bytesPerBlock.kvroute)} |`,
    `| kvroute applyEventBatch (payload bytes) | ${formatNumber(c.eventBatch.storedEventsPerS)} | ${formatNumber(c.eventBatch.removedEventsPerS)} | |`,
    `| ${RADIX} | ${formatNumber(stored.radix.median)} | ${formatNumber(removed.radix.median)} | ${formatNumber(bytesPerBlock.radix)} |`,
    `| ${POOL} | ${formatNumber(stored.pool.median)} | ${formatNumber(removed.pool.median)} | ${formatNumber(bytesPerBlock.pool)} |`,
    '',
    `Hashing ${c.hashNs.tokens} tokens, p50 / p99: kvroute ${formatNumber(hash.kvroute.p50)} / ${formatNumber(hash.kvroute.p99)} us, Dynamo ${formatNumber(hash.dynamo.p50)} / ${formatNumber(hash.dynamo.p99)} us.`,
  ].join('\n');

  const pooledUs = (rounds: number[][]) => rounds.flat().map((ns) => ns / 1000);
  return {
    figures,
    sections: [{ title: "Dynamo indexer on kvroute's indexer workload", markdown }],
    charts: [
      {
        name: 'find-matches-cdf',
        title: 'find_matches latency, kvroute and Dynamo',
        svg: cdfChart({
          title: `find_matches, 8k-token queries, ${setting}`,
          xLabel: 'latency per call, us (log scale)',
          logX: true,
          series: [
            { name: 'kvroute public API', values: pooledUs(c.latencyNs.kvroutePublic) },
            { name: 'kvroute bare addon call', values: pooledUs(c.latencyNs.kvrouteBare), dashed: true },
            { name: 'Dynamo RadixTree', values: pooledUs(c.latencyNs.dynamoRadix) },
            { name: 'Dynamo compressed, thread pool', values: pooledUs(c.latencyNs.dynamoPool) },
          ],
        }),
      },
      {
        name: 'events',
        title: 'KV events applied per second, kvroute and Dynamo',
        svg: barChart({
          title: `KV events applied per second (${EVENT_BLOCKS} blocks per event)`,
          categories: ['BlockStored', 'BlockRemoved'],
          series: [
            { name: 'kvroute', values: [stored.kvroute.median, removed.kvroute.median] },
            { name: 'Dynamo RadixTree', values: [stored.radix.median, removed.radix.median] },
            { name: 'Dynamo compressed, thread pool', values: [stored.pool.median, removed.pool.median] },
          ],
          yLabel: 'events per second',
        }),
      },
    ],
    data: {
      blocks,
      latencyUs: lat,
      stored,
      removed,
      bytesPerBlock,
      hashUs: hash,
      scoreChecks: c.scoreChecks,
      eventBatch: c.eventBatch,
      dynamo: { ready: c.ready, built: c.dynamoBuilt, removed: c.dynamoRemoved },
      kvroute: c.kvroute,
    },
  };
}

function eventBatchFigures(c: IndexerComparison, radixStored: number, radixRemoved: number): Figure[] {
  return [
    {
      name: `stored events applied per second from payload bytes, kvroute applyEventBatch vs ${RADIX} (handed decoded events and hashes)`,
      value: c.eventBatch.storedEventsPerS,
      unit: 'events/s',
      reference: { name: RADIX, value: radixStored },
      target: { op: '>=', value: 1.5 * radixStored },
      headline: true,
      note: `msgpack batches of ${EVENTS_PER_BATCH} events, ${formatNumber(c.eventBatch.payloadBytes)} bytes each (target: 1.5x Dynamo's tree, issue 14)`,
    },
    {
      name: `removed events applied per second from payload bytes, kvroute applyEventBatch vs ${RADIX}`,
      value: c.eventBatch.removedEventsPerS,
      unit: 'events/s',
      reference: { name: RADIX, value: radixRemoved },
      target: { op: '>=', value: radixRemoved },
    },
  ];
}
