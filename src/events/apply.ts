// Applies decoded KV event batches to the index for one (worker, dpRank), pure of I/O.
//
// Medium policy: the index holds what a worker can serve from GPU memory, so only events about
// device blocks are applied: medium "GPU" or "device" (any case), or none at all (engines that do
// not say mean the GPU). Events about other tiers (CPU offload, disk, LMCache...) are ignored and
// counted (`ignoredMedium`): a block offloaded to CPU is not a prefix hit on the GPU, and a CPU copy
// being dropped says nothing about the GPU copy. AllBlocksCleared always applies.
//
// A stored event whose block size differs from the index's, or whose token count is not
// blocks x block size, is rejected whole and counted; so is whatever the index itself refuses
// (unknown parent, duplicate hash, self parent), never applied in part.
import type { MultimodalId } from '../core/hashing.js';
import { countRejection, type IngestCounters } from './counters.js';
import type { DecodedBatch, RemovedEvent, StoredEvent } from './decode.js';

/** What ingestion needs from the index (KvIndexer in 'events' mode provides it). */
export interface IndexerPort {
  readonly blockSize: number;
  readonly mode?: string;
  applyStored(
    worker: number,
    dpRank: number,
    parentHash: bigint | null,
    blockHashes: BigUint64Array,
    tokenIds: Uint32Array,
    opts?: { loraName?: string; mmHashes?: ReadonlyArray<ReadonlyArray<MultimodalId> | null | undefined> },
  ): boolean;
  applyRemoved(worker: number, dpRank: number, blockHashes: BigUint64Array): number;
  applyCleared(worker: number, dpRank: number): void;
  removeWorker(worker: number): void;
  stats(): { rejected: object };
}

const DEVICE_MEDIUMS = new Set(['GPU', 'DEVICE']);

export function isDeviceMedium(medium: string | null): boolean {
  return medium === null || DEVICE_MEDIUMS.has(medium.toUpperCase());
}

/**
 * One per index: applies batches for any worker and attributes the index's rejections to the
 * worker whose event caused them (the index counts reasons globally; the difference of its
 * counters around a refused event tells which reason it was).
 */
export class BatchApplier {
  private lastRejected: Record<string, number>;

  constructor(readonly indexer: IndexerPort) {
    this.lastRejected = this.readRejected();
  }

  /** Applies every event of `batch` in order; returns the number of events applied. */
  applyBatch(worker: number, dpRank: number, batch: DecodedBatch, counters: IngestCounters): number {
    counters.batches++;
    counters.unknownEventTypes += batch.skippedUnknown;
    counters.otherGroupEvents += batch.skippedOtherGroup;
    let applied = 0;
    for (const event of batch.events) {
      let ok: boolean;
      switch (event.kind) {
        case 'stored':
          ok = this.applyStored(worker, dpRank, event, counters);
          break;
        case 'removed':
          ok = this.applyRemoved(worker, dpRank, event, counters);
          break;
        case 'cleared':
          this.indexer.applyCleared(worker, dpRank);
          ok = true;
          break;
      }
      if (ok) applied++;
    }
    counters.applied += applied;
    return applied;
  }

  /** Drops everything the index holds for (worker, dpRank). */
  clear(worker: number, dpRank: number): void {
    this.indexer.applyCleared(worker, dpRank);
  }

  private applyStored(worker: number, dpRank: number, e: StoredEvent, counters: IngestCounters): boolean {
    if (!isDeviceMedium(e.medium)) {
      counters.ignoredMedium++;
      return false;
    }
    const blockSize = this.indexer.blockSize;
    if (e.blockSize !== blockSize) {
      countRejection(counters, 'blockSize');
      return false;
    }
    if (e.tokenIds.length !== e.blockHashes.length * blockSize) {
      countRejection(counters, 'tokenCount');
      return false;
    }
    if (e.blockHashes.length === 0) return false; // nothing stored: nothing to do
    const opts: { loraName?: string; mmHashes?: Array<string[] | null> } = {};
    if (e.loraName !== null) opts.loraName = e.loraName;
    if (e.mmExtraKeys) opts.mmHashes = e.mmExtraKeys.slice(0, e.blockHashes.length);
    let ok: boolean;
    try {
      ok = this.indexer.applyStored(worker, dpRank, e.parentHash, e.blockHashes, e.tokenIds, opts);
    } catch (err) {
      // The decoder hands over well-typed arrays, so this is the index refusing a value (e.g. a
      // multimodal id it cannot hash): the event is dropped, the stream goes on.
      if (err instanceof TypeError || err instanceof RangeError) {
        countRejection(counters, 'invalid');
        return false;
      }
      throw err;
    }
    if (!ok) this.attributeRejection(counters);
    return ok;
  }

  private applyRemoved(worker: number, dpRank: number, e: RemovedEvent, counters: IngestCounters): boolean {
    if (!isDeviceMedium(e.medium)) {
      counters.ignoredMedium++;
      return false;
    }
    const removed = this.indexer.applyRemoved(worker, dpRank, e.blockHashes);
    const unknown = e.blockHashes.length - removed;
    if (unknown > 0) countRejection(counters, 'unknownRemoval', unknown);
    return true;
  }

  private attributeRejection(counters: IngestCounters): void {
    const now = this.readRejected();
    let attributed = false;
    for (const [reason, n] of Object.entries(now)) {
      const delta = n - (this.lastRejected[reason] ?? 0);
      // Unknown removals are counted where they happen (applyRemoved returns how many it found).
      if (delta > 0 && reason !== 'unknownRemoval') {
        countRejection(counters, reason, delta);
        attributed = true;
      }
    }
    if (!attributed) countRejection(counters, 'indexer');
    this.lastRejected = now;
  }

  private readRejected(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [reason, n] of Object.entries(this.indexer.stats().rejected)) {
      if (typeof n === 'number') out[reason] = n;
    }
    return out;
  }
}
