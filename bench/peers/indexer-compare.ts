// kvroute's indexer and Dynamo's on one workload, in alternating rounds: each round builds both
// from empty (stored events per second, memory) and applies the removals (removed events per
// second); the last round also measures find_matches in alternating latency rounds and checks the
// overlap scores of every query, before and after the removals. Figures are medians of rounds.
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { fast } from '../../src/core/fast-calls.js';
import { BLOCK_SIZE, documentCount, queryTokens, removedEvents, storedEvents, type RemovedEvent, type StoredEvent } from '../indexer/workload.js';
import { gcAndSettle } from '../lib/gc-settle.js';
import { sampleCalls } from '../lib/timer.js';
import type { DynamoBuilt, DynamoIndexer, DynamoReady, DynamoRemoved } from './dynamo-indexer.js';
import { measureApplyEventBatch, type EventBatchFigures } from './event-batch.js';
import { compareScores, describeScoreCheck, scoresFromTriples, type Score, type ScoreCheck } from './scores.js';
import type { PeerWorkload } from './workload-file.js';

export interface IndexerSizes {
  docsPerWorker: number;
  /** Build + remove rounds. */
  rounds: number;
  /** find_matches rounds in the last build, and samples per implementation per round. */
  latencyRounds: number;
  latencySamples: number;
  hashSamples: number;
}

export interface KvrouteWorkload {
  stored: StoredEvent[];
  removed: RemovedEvent[];
  queryTokens: Uint32Array[];
  queries: BigUint64Array[];
}

export function kvrouteWorkload(docsPerWorker: number): KvrouteWorkload {
  const tokens = queryTokens(documentCount(docsPerWorker));
  return {
    stored: storedEvents(docsPerWorker),
    removed: removedEvents(docsPerWorker),
    queryTokens: tokens,
    queries: tokens.map((t) => computeBlockHashes(t, BLOCK_SIZE)),
  };
}

/** The same workload for the peer: local hashes by kvroute's own hashing (Dynamo is handed hashes). */
export function peerWorkload(w: KvrouteWorkload): PeerWorkload {
  return {
    blockSize: BLOCK_SIZE,
    stored: w.stored.map((e) => ({
      worker: e.worker,
      dpRank: 0,
      parent: e.parent,
      hashes: e.hashes,
      localHashes: computeBlockHashes(e.tokens, BLOCK_SIZE),
      tokens: e.tokens,
    })),
    removed: w.removed.map((e) => ({ worker: e.worker, dpRank: 0, hashes: e.hashes })),
    queries: w.queries.map((localHashes, i) => ({ localHashes, tokens: w.queryTokens[i] })),
  };
}

export interface KvrouteRound {
  storedSeconds: number;
  removedSeconds: number;
  blocks: number;
  blocksAfterRemoval: number;
  approxBytes: number;
}

export interface IndexerComparison {
  ready: DynamoReady;
  stored: number;
  removed: number;
  queries: number;
  kvroute: KvrouteRound[];
  dynamoBuilt: DynamoBuilt[];
  dynamoRemoved: DynamoRemoved[];
  /** Per latency round, per-call nanoseconds. */
  latencyNs: { kvroutePublic: number[][]; kvrouteBare: number[][]; dynamoRadix: number[][]; dynamoPool: number[][] };
  hashNs: { kvroute: number[]; dynamo: number[]; tokens: number };
  scoreChecks: ScoreCheck[];
  eventBatch: EventBatchFigures;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function buildKvroute(w: KvrouteWorkload): { index: KvIndexer; seconds: number } {
  const index = new KvIndexer({ blockSize: BLOCK_SIZE });
  const t0 = performance.now();
  let refused = 0;
  for (const e of w.stored) if (!index.applyStored(e.worker, 0, e.parent, e.hashes, e.tokens)) refused++;
  const seconds = (performance.now() - t0) / 1000;
  if (refused > 0) throw new Error(`kvroute refused ${refused} of the workload's stored events`);
  return { index, seconds };
}

function removeKvroute(index: KvIndexer, w: KvrouteWorkload): number {
  const t0 = performance.now();
  for (const e of w.removed) index.applyRemoved(e.worker, 0, e.hashes);
  return (performance.now() - t0) / 1000;
}

export function kvrouteScores(index: KvIndexer, queries: readonly BigUint64Array[]): Score[][] {
  return queries.map((q) => index.findMatches(q).map((m): Score => [m.worker, m.dpRank, m.blocks]));
}

/**
 * The addon's own call, without the public API's argument checks and result objects: the
 * binding is internal to the package, so this is the one place that would follow a change to it.
 */
function bareFindMatches(index: KvIndexer): (q: BigUint64Array) => number {
  const out = new Int32Array(4 * 256);
  const handle = index.native.handle;
  // As the public call makes it in events mode with the default clock (no time, no option).
  return (q) => fast.findMatchesFast(handle, q, out);
}

function checkScores(
  index: KvIndexer,
  w: KvrouteWorkload,
  dynamo: { radix: number[][]; pool: number[][] },
  when: string,
  log: (line: string) => void,
): ScoreCheck[] {
  const ours = kvrouteScores(index, w.queries);
  const checks = [
    compareScores(`Dynamo RadixTree (${when})`, ours, dynamo.radix.map(scoresFromTriples)),
    compareScores(`Dynamo ConcurrentRadixTreeCompressed (${when})`, ours, dynamo.pool.map(scoresFromTriples)),
  ];
  for (const c of checks) log(describeScoreCheck(c));
  return checks;
}

export async function compareIndexers(
  w: KvrouteWorkload,
  peer: DynamoIndexer,
  ready: DynamoReady,
  sizes: IndexerSizes,
  log: (line: string) => void,
): Promise<IndexerComparison> {
  const kvroute: KvrouteRound[] = [];
  const dynamoBuilt: DynamoBuilt[] = [];
  const dynamoRemoved: DynamoRemoved[] = [];
  const latencyNs: IndexerComparison['latencyNs'] = { kvroutePublic: [], kvrouteBare: [], dynamoRadix: [], dynamoPool: [] };
  const scoreChecks: ScoreCheck[] = [];
  let hashNs: IndexerComparison['hashNs'] = { kvroute: [], dynamo: [], tokens: 0 };

  for (let round = 0; round < sizes.rounds; round++) {
    const last = round === sizes.rounds - 1;
    gc();
    // Who builds first alternates, so neither always meets the machine right after the other.
    let ours!: { index: KvIndexer; seconds: number };
    let theirs!: DynamoBuilt;
    for (const turn of round % 2 === 0 ? ['kvroute', 'dynamo'] : ['dynamo', 'kvroute']) {
      if (turn === 'kvroute') ours = buildKvroute(w);
      else theirs = await peer.build();
    }
    const stats = ours.index.stats();
    dynamoBuilt.push(theirs);
    log(
      `round ${round + 1}/${sizes.rounds}: stored events/s kvroute ${Math.round(w.stored.length / ours.seconds)}, Dynamo RadixTree ${Math.round(theirs.events / theirs.radix.seconds)}, ` +
        `compressed (thread pool) ${Math.round(theirs.events / theirs.pool.seconds)}; blocks ${stats.blocks} / ${theirs.radix.blocks} / ${theirs.pool.blocks}`,
    );
    if (theirs.radix.rejected + theirs.pool.rejected > 0)
      log(`WARNING: Dynamo refused stored events (RadixTree ${theirs.radix.rejected}, thread pool ${theirs.pool.rejected})`);

    if (last) {
      scoreChecks.push(...checkScores(ours.index, w, await peer.scores(), 'after the stored events', log));
      const bare = bareFindMatches(ours.index);
      for (let r = 0; r < sizes.latencyRounds; r++) {
        // Each after a settled GC (bench/lib/gc-settle.ts), the public call and the bare one in
        // turn first: the public call always ran right after gc(), inside its helper threads' work.
        const measureKvroute = async () => {
          const timePublic = async () => {
            await gcAndSettle();
            latencyNs.kvroutePublic.push(
              Array.from(
                sampleCalls((i) => ours.index.findMatches(w.queries[i % w.queries.length]), { samples: sizes.latencySamples, warmup: 500, batch: 1 }).perCallNs,
              ),
            );
          };
          const timeBare = async () => {
            await gcAndSettle();
            latencyNs.kvrouteBare.push(
              Array.from(sampleCalls((i) => bare(w.queries[i % w.queries.length]), { samples: sizes.latencySamples, warmup: 500, batch: 1 }).perCallNs),
            );
          };
          for (const time of r % 2 === 0 ? [timePublic, timeBare] : [timeBare, timePublic]) await time();
        };
        const measureDynamo = async () => {
          const l = await peer.latency(sizes.latencySamples, r);
          latencyNs.dynamoRadix.push(l.radix_ns);
          latencyNs.dynamoPool.push(l.pool_ns);
        };
        if (r % 2 === 0) {
          await measureKvroute();
          await measureDynamo();
        } else {
          await measureDynamo();
          await measureKvroute();
        }
        log(`find_matches round ${r + 1}/${sizes.latencyRounds} done`);
      }
      const dynHash = await peer.hash(sizes.hashSamples);
      const ourHash = sampleCalls((i) => computeBlockHashes(w.queryTokens[i % w.queryTokens.length], BLOCK_SIZE), {
        samples: sizes.hashSamples,
        warmup: 200,
        batch: 1,
      });
      hashNs = { kvroute: Array.from(ourHash.perCallNs), dynamo: dynHash.ns, tokens: dynHash.tokens };
    }

    let removedSeconds = 0;
    let removal!: DynamoRemoved;
    for (const turn of round % 2 === 0 ? ['kvroute', 'dynamo'] : ['dynamo', 'kvroute']) {
      if (turn === 'kvroute') removedSeconds = removeKvroute(ours.index, w);
      else removal = await peer.remove();
    }
    dynamoRemoved.push(removal);
    const after = ours.index.stats();
    kvroute.push({ storedSeconds: ours.seconds, removedSeconds, blocks: stats.blocks, blocksAfterRemoval: after.blocks, approxBytes: stats.approxBytes });
    if (removal.radix.rejected + removal.pool.rejected > 0)
      log(`WARNING: Dynamo refused removed events (RadixTree ${removal.radix.rejected}, thread pool ${removal.pool.rejected})`);
    if (last) scoreChecks.push(...checkScores(ours.index, w, await peer.scores(), 'after the removals', log));
  }
  const eventBatch = measureApplyEventBatch(w, log);
  return {
    ready,
    stored: w.stored.length,
    removed: w.removed.length,
    queries: w.queries.length,
    kvroute,
    dynamoBuilt,
    dynamoRemoved,
    latencyNs,
    hashNs,
    scoreChecks,
    eventBatch,
  };
}
