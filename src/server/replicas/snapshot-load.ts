// Warm start, first half: at startup, before the pools are built, fetch the cluster's latest
// snapshot from the object store and restore both pools' indexes from it. Anything short of a
// usable snapshot (NATS unreachable, none published, damaged, of another format or configuration,
// older than snapshotMaxAgeMs, or all of it slower than warmStartTimeoutMs) is a cold start,
// with the reason: the router then builds empty indexes as it always did.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { KvIndexer } from '../../core/indexer.js';
import type { PoolName } from '../../core/vocabulary.js';
import { POOL_NAMES } from '../../core/vocabulary.js';
import type { ReplicasConfig } from '../config/config.js';
import { decodeWarmSnapshot, settingsMismatch, SnapshotRejected, type IndexSettings, type StreamPosition } from './snapshot-format.js';
import { SnapshotStore } from './snapshot-store.js';
import type { RestoreOutcome } from './ports.js';

export interface SnapshotLoad {
  outcome: RestoreOutcome;
  /** Why not restored (for the log). */
  reason?: string;
  /** Restored: both pools' indexes. */
  indexers?: Record<PoolName, KvIndexer>;
  /** Restored: where each worker's event streams stood, per pool. */
  streams?: Record<PoolName, StreamPosition[]>;
  /** The snapshot seen, restored or not. */
  snapshot?: { bytes: number; createdAt: number; replica: string };
  fetchMs: number;
  restoreMs: number;
  /** NATS did not answer within connectTimeoutMs: the replica sync need not wait for it again. */
  natsUnreachable?: boolean;
}

export interface SnapshotLoadOptions {
  config: ReplicasConfig;
  cluster: string;
  /** This router's settings: a snapshot taken under others is not used. */
  settings: IndexSettings;
  clock?: () => number;
}

/** Never throws: every failure is a cold start with its reason. */
export async function loadSnapshot(o: SnapshotLoadOptions): Promise<SnapshotLoad> {
  const started = performance.now();
  let nc: NatsConnection | undefined;
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  const timeout = new Promise<SnapshotLoad>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          outcome: 'unavailable',
          reason: `no snapshot loaded within warmStartTimeoutMs (${o.config.warmStartTimeoutMs} ms)`,
          fetchMs: performance.now() - started,
          restoreMs: 0,
        }),
      o.config.warmStartTimeoutMs,
    );
  });
  const attempt = (async (): Promise<SnapshotLoad> => {
    let stage = 'connecting to NATS';
    try {
      const conn = await connect({
        servers: o.config.nats.split(','),
        name: `kvroute ${o.cluster} warm start`,
        timeout: o.config.connectTimeoutMs,
        reconnect: false,
      });
      // Connected after the timeout settled the load: nobody will close it otherwise, nor read on.
      if (over) {
        await conn.close();
        return { outcome: 'unavailable', reason: 'connected after warmStartTimeoutMs', fetchMs: performance.now() - started, restoreMs: 0 };
      }
      nc = conn;
      stage = 'fetching the snapshot';
      const stored = await (await SnapshotStore.open(nc, o.cluster)).get();
      const fetchMs = performance.now() - started;
      if (!stored) return { outcome: 'absent', reason: 'no snapshot has been published yet', fetchMs, restoreMs: 0 };
      return await restoreFrom(stored.bytes, fetchMs, o);
    } catch (err) {
      const natsUnreachable = nc === undefined;
      return { outcome: 'unavailable', reason: `${stage}: ${(err as Error).message}`, fetchMs: performance.now() - started, restoreMs: 0, natsUnreachable };
    }
  })();
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    over = true;
    clearTimeout(timer);
    await nc?.close().catch(() => undefined);
  }
}

async function restoreFrom(bytes: Uint8Array, fetchMs: number, o: SnapshotLoadOptions): Promise<SnapshotLoad> {
  const at = performance.now();
  const cold = (outcome: RestoreOutcome, reason: string, snapshot?: SnapshotLoad['snapshot']): SnapshotLoad => ({
    outcome,
    reason,
    snapshot,
    fetchMs,
    restoreMs: performance.now() - at,
  });
  let snapshot;
  try {
    snapshot = decodeWarmSnapshot(bytes);
  } catch (err) {
    if (err instanceof SnapshotRejected) return cold('rejected', err.message);
    throw err;
  }
  const seen = { bytes: bytes.length, createdAt: snapshot.createdAt, replica: snapshot.replica };
  const mismatch = settingsMismatch(snapshot.settings, o.settings);
  if (mismatch) return cold('mismatch', mismatch, seen);
  const ageMs = (o.clock ?? Date.now)() - snapshot.createdAt;
  if (ageMs > o.config.snapshotMaxAgeMs)
    return cold('stale', `taken ${Math.round(ageMs / 1000)} s ago, more than snapshotMaxAgeMs (${o.config.snapshotMaxAgeMs} ms)`, seen);
  const indexers = {} as Record<PoolName, KvIndexer>;
  for (const pool of POOL_NAMES) {
    try {
      indexers[pool] = await KvIndexer.restoreAsync(snapshot.pools[pool].index, { clock: o.clock });
    } catch (err) {
      return cold('rejected', `the ${pool} index: ${(err as Error).message}`, seen);
    }
    // The container's settings are the sender's word; the dump's own header is the index's.
    const ix = indexers[pool];
    if (ix.blockSize !== o.settings.blockSize || ix.mode !== o.settings.mode)
      return cold('mismatch', `the ${pool} index has block size ${ix.blockSize}, mode ${ix.mode}`, seen);
  }
  const streams = { prefill: snapshot.pools.prefill.streams, decode: snapshot.pools.decode.streams };
  return { outcome: 'restored', indexers, streams, snapshot: seen, fetchMs, restoreMs: performance.now() - at };
}
