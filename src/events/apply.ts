// Applies KV event payloads to the index for one (worker, dpRank): the decoding, validation,
// hashing and applying happen in Rust (KvIndexer.applyEventBatch, native/src/events); this module
// picks the synchronous or threaded call and reads the typed result into the worker's counters.
//
// Medium policy (native/src/events/apply.rs): events about device blocks (medium "GPU" or
// "device", any case, or none) update the device index; events about lower tiers (CPU, disk,
// external pools: native/src/tiers/medium.rs) update the index's lower tiers (`lowerTierEvents`),
// unless the indexer was built without them; events about any other medium are not applied and
// are counted per medium (`ignoredMedium`, `ignoredByMedium`).
import type { EventBatchResult } from '../core/indexer.js';
import { countRejection, type IngestCounters } from './counters.js';

/** What ingestion needs from the index (KvIndexer in 'events' mode provides it). */
export interface IndexerPort {
  readonly blockSize: number;
  readonly mode?: string;
  applyEventBatch(worker: number, dpRank: number, payload: Uint8Array): EventBatchResult;
  applyEventBatchAsync(worker: number, dpRank: number, payload: Uint8Array, opts?: { inPlace?: boolean }): Promise<EventBatchResult>;
  applyCleared(worker: number, dpRank: number): void;
  removeWorker(worker: number): void;
}

/** Payloads from this size on are applied on a libuv thread (their apply takes milliseconds). */
export const ASYNC_PAYLOAD_BYTES = 64 * 1024;

/** One per index: applies payloads for any worker and counts what they did per worker. */
export class BatchApplier {
  constructor(
    readonly indexer: IndexerPort,
    private readonly asyncFromBytes = ASYNC_PAYLOAD_BYTES,
  ) {}

  /** Applies one payload; resolves with the number of events it held (0 when undecodable). */
  async applyPayload(worker: number, dpRank: number, payload: Uint8Array, counters: IngestCounters): Promise<number> {
    const result =
      payload.length >= this.asyncFromBytes
        ? // The payload is this call's alone (a received message): read in place, not copied.
          await this.indexer.applyEventBatchAsync(worker, dpRank, payload, { inPlace: true })
        : this.indexer.applyEventBatch(worker, dpRank, payload);
    return countBatch(result, counters);
  }

  /** Drops everything the index holds for (worker, dpRank). */
  clear(worker: number, dpRank: number): void {
    this.indexer.applyCleared(worker, dpRank);
  }
}

/** Adds a batch's outcome to a worker's counters; returns its event count. */
export function countBatch(r: EventBatchResult, counters: IngestCounters): number {
  if (r.decodeError) {
    // The batch is lost (a replay would return the same bytes); the stream itself goes on.
    counters.decodeErrors++;
    return 0;
  }
  counters.batches++;
  let lower = 0;
  for (const t of r.lowerTiers) lower += t.stored + t.removed;
  counters.applied += r.stored + r.removed + r.cleared + lower;
  counters.lowerTierEvents += lower;
  counters.unknownEventTypes += r.unknownTypes;
  counters.otherGroupEvents += r.otherGroups;
  for (const [reason, n] of Object.entries(r.refused)) if (n > 0) countRejection(counters, reason, n);
  for (const m of r.otherMedia) {
    const n = m.stored + m.removed;
    counters.ignoredMedium += n;
    counters.ignoredByMedium[m.medium] = (counters.ignoredByMedium[m.medium] ?? 0) + n;
  }
  return r.events;
}
