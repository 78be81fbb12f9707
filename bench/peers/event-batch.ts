// `KvIndexer.applyEventBatch(worker, dpRank, payloadBytes)` on the same workload as Dynamo's
// indexer: every event encoded as the engines send it (msgpack batches, PROTOCOLS.md section 2,
// the same payloads the indexer suite applies), then decoded, hashed and applied natively from
// the bytes. Dynamo's indexer is handed hashes instead, so kvroute does more work per event.
import { KvIndexer } from '../../src/core/indexer.js';
import { EVENTS_PER_BATCH, removedPayloads, storedPayloads, type Payload } from '../indexer/payloads.js';
import { BLOCK_SIZE, type RemovedEvent, type StoredEvent } from '../indexer/workload.js';

export interface EventBatchFigures {
  storedEventsPerS: number;
  removedEventsPerS: number;
  /** Mean payload size of a batch of stored events. */
  payloadBytes: number;
}

/** Applies every payload; throws when an event was not applied (the figures would be wrong). */
function applyAll(index: KvIndexer, payloads: readonly Payload[], kind: 'stored' | 'removed'): number {
  const t0 = performance.now();
  let applied = 0;
  for (const p of payloads) applied += index.applyEventBatch(p.worker, 0, p.bytes)[kind];
  const seconds = (performance.now() - t0) / 1000;
  const events = payloads.reduce((n, p) => n + p.events, 0);
  if (applied !== events) throw new Error(`applyEventBatch applied ${applied} of ${events} ${kind} events`);
  return events / seconds;
}

export function measureApplyEventBatch(
  w: { stored: readonly StoredEvent[]; removed: readonly RemovedEvent[] },
  log: (line: string) => void,
): EventBatchFigures {
  const index = new KvIndexer({ blockSize: BLOCK_SIZE });
  const stored = storedPayloads(w.stored);
  const removed = removedPayloads(w.removed);
  const storedEventsPerS = applyAll(index, stored, 'stored');
  const blocks = index.stats().blocks;
  const removedEventsPerS = applyAll(index, removed, 'removed');
  log(
    `applyEventBatch (${EVENTS_PER_BATCH} events a payload): ${Math.round(storedEventsPerS)} stored events/s (${blocks} blocks indexed), ${Math.round(removedEventsPerS)} removed events/s`,
  );
  return { storedEventsPerS, removedEventsPerS, payloadBytes: stored.reduce((n, p) => n + p.bytes.length, 0) / Math.max(1, stored.length) };
}
