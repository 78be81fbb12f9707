// The warm start as the composition root wires it: the snapshot loaded before the pools are built
// (their indexes are the restored ones), the restored streams resumed as workers are subscribed,
// and this replica's index captured for the publisher.
import type { KvIndexer } from '../../core/indexer.js';
import type { PoolName } from '../../core/vocabulary.js';
import { POOL_NAMES } from '../../core/vocabulary.js';
import type { EventIngest } from '../../events/ingest.js';
import type { Logger } from '../../util/logger.js';
import type { RouterConfig, WorkerConfig } from '../config/config.js';
import type { IndexSettings, StreamPosition, WarmSnapshot } from '../replicas/snapshot-format.js';
import { loadSnapshot } from '../replicas/snapshot-load.js';
import { subjectToken } from '../replicas/sync.js';
import { WarmStart } from '../replicas/warm-start.js';

/** What a snapshot must have been taken under to serve this router. */
export function indexSettings(config: RouterConfig): IndexSettings {
  const approximate = config.indexerMode === 'approximate';
  return {
    model: config.models[0],
    blockSize: config.blockSize,
    mode: config.indexerMode,
    lowerTiers: !approximate && config.lowerTiers,
    maxBlocks: approximate ? null : (config.maxIndexedBlocks ?? null),
  };
}

/** With replicas and warm start on: the snapshot loaded (or the cold start decided) and its tracker. */
export async function beginWarmStart(
  config: RouterConfig,
  log: Logger,
  startedAt: number,
  clock?: () => number,
): Promise<{ warm: WarmStart; restored?: Record<PoolName, KvIndexer>; natsUnreachable: boolean } | undefined> {
  const r = config.replicas;
  if (!r) return undefined;
  const load = r.warmStart
    ? await loadSnapshot({ config: r, cluster: r.cluster ?? subjectToken(config.models[0]), settings: indexSettings(config), clock })
    : undefined;
  const restored = load?.indexers;
  const warm = new WarmStart({
    load,
    timeoutMs: r.warmStartTimeoutMs,
    startedAt,
    log: log.child({ component: 'warm-start' }),
    dropWorker: (pool, worker) => restored?.[pool].removeWorker(worker),
  });
  return { warm, restored, natsUnreachable: load?.natsUnreachable === true };
}

/**
 * Subscribes a worker to its KV events; a worker whose streams were restored resumes them after
 * the snapshot's last batch (a rank that had applied nothing starts empty), and the warm start
 * waits for its catch-up.
 */
export function subscribeResuming(ingest: EventIngest, indexer: KvIndexer, w: WorkerConfig, pool: PoolName, blockSize: number, warm?: WarmStart): void {
  const resume = warm?.claim(pool, w.id, w.kvEvents);
  if (w.kvEvents.length === 0) return;
  ingest.addWorker({
    worker: w.id,
    endpoints: w.kvEvents,
    replayEndpoints: w.replayEndpoints.length > 0 ? w.replayEndpoints : undefined,
    blockSize,
    resumeAfter: resume,
  });
  if (!resume) return;
  resume.forEach((seq, rank) => {
    if (seq === null) indexer.applyCleared(w.id, rank);
  });
  warm?.track(ingest.caughtUp(w.id));
}

/**
 * Both pools' indexes with, per worker and rank, the last batch they hold. The positions are read
 * before the dump is copied (the copy happens later, under the index's lock), so the dump holds at
 * least what they say: the new replica may replay a batch it already has, which changes nothing,
 * and never misses one. A rank cleared between the two
 * (lost history, an engine restart) holds less than its position says: the newcomer then knows
 * fewer blocks than it could (its next live batch repairs or clears that rank), never stale ones.
 */
export async function captureSnapshot(
  config: RouterConfig,
  replica: string,
  pools: Record<PoolName, { indexer: KvIndexer; ingest?: EventIngest }>,
): Promise<WarmSnapshot> {
  const createdAt = Date.now();
  const streams = {} as Record<PoolName, StreamPosition[]>;
  for (const pool of POOL_NAMES) {
    streams[pool] = (pools[pool].ingest?.stats() ?? []).map((s) => ({
      worker: s.worker,
      endpoints: s.ranks.map((r) => r.endpoint),
      lastSeq: s.ranks.map((r) => r.lastSeq),
    }));
  }
  const [prefill, decode] = await Promise.all(POOL_NAMES.map((p) => pools[p].indexer.snapshotAsync()));
  return {
    settings: indexSettings(config),
    createdAt,
    replica,
    pools: { prefill: { index: prefill, streams: streams.prefill }, decode: { index: decode, streams: streams.decode } },
  };
}
