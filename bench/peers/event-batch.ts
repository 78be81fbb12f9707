// The place for `KvIndexer.applyEventBatch(worker, dpRank, payloadBytes)` (issue 14: KV event
// payloads decoded, hashed and applied in Rust). Once the addon has it, the peers suite measures
// it on the same workload as Dynamo's indexer: every event encoded as the engines send it (a
// msgpack batch, PROTOCOLS.md section 2, positional events, exact uint64 hashes), then applied
// from the bytes. Until then the report says it is not available in this build.
import { Packr } from 'msgpackr';
import { KvIndexer } from '../../src/core/indexer.js';
import { BLOCK_SIZE, type RemovedEvent, type StoredEvent } from '../indexer/workload.js';

export type EventBatchFigures =
  | { available: false }
  | { available: true; storedEventsPerS: number; removedEventsPerS: number; payloadBytes: number };

// Hashes are BigInts: msgpackr writes them as uint64, as vLLM does.
const packr = new Packr({ useRecords: false, variableMapSize: true });
const TIMESTAMP = 1_700_000_000.5;

/** One engine batch `[ts, [event], dp_rank]` holding a positional BlockStored event. */
export function storedPayload(e: StoredEvent, dpRank = 0): Uint8Array {
  const event = ['BlockStored', [...e.hashes], e.parent, [...e.tokens], BLOCK_SIZE, null, 'GPU', null, null];
  return packr.pack([TIMESTAMP, [event], dpRank]);
}

/** One engine batch holding a positional BlockRemoved event. */
export function removedPayload(e: RemovedEvent, dpRank = 0): Uint8Array {
  return packr.pack([TIMESTAMP, [['BlockRemoved', [...e.hashes], 'GPU']], dpRank]);
}

type BatchApply = (worker: number, dpRank: number, payload: Uint8Array) => unknown;

/** The addon's batch call, if this build has it. */
function applyEventBatchOf(index: KvIndexer): BatchApply | undefined {
  const fn = (index as unknown as { applyEventBatch?: BatchApply }).applyEventBatch;
  return typeof fn === 'function' ? fn.bind(index) : undefined;
}

export function measureApplyEventBatch(w: { stored: StoredEvent[]; removed: RemovedEvent[] }, log: (line: string) => void): EventBatchFigures {
  const index = new KvIndexer({ blockSize: BLOCK_SIZE });
  const apply = applyEventBatchOf(index);
  if (!apply) {
    log('KvIndexer.applyEventBatch is not in this build: its figures are left out');
    return { available: false };
  }
  const stored = w.stored.map((e) => storedPayload(e));
  const removed = w.removed.map((e) => removedPayload(e));
  const time = (payloads: Uint8Array[], workers: number[]) => {
    const t0 = performance.now();
    for (let i = 0; i < payloads.length; i++) apply(workers[i], 0, payloads[i]);
    return (performance.now() - t0) / 1000;
  };
  const storedS = time(stored, w.stored.map((e) => e.worker));
  const blocks = index.stats().blocks;
  const removedS = time(removed, w.removed.map((e) => e.worker));
  log(`applyEventBatch: ${Math.round(stored.length / storedS)} stored events/s (${blocks} blocks indexed), ${Math.round(removed.length / removedS)} removed events/s`);
  return {
    available: true,
    storedEventsPerS: stored.length / storedS,
    removedEventsPerS: removed.length / removedS,
    payloadBytes: stored.reduce((n, p) => n + p.length, 0) / stored.length,
  };
}
