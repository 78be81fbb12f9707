// KV cache events as the model reports them (the fields of vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared; the worker encodes them to msgpack). Replaying them in order reproduces the
// model's set of cached blocks exactly.
//
// Hashes and tokens travel as typed arrays, which is what the router's KvIndexer takes: a
// BlockStored's arrays are views of its sequence's own buffers (entries that never change once
// written), so announcing a run of blocks copies nothing and creates no BigInt per block.

/** Where a block is: the GPU's prefix cache, or the CPU offload tier (vLLM's and Dynamo's names). */
export type KvMedium = 'GPU' | 'CPU';

export type KvEvent =
  | {
      type: 'BlockStored';
      blockHashes: BigUint64Array;
      parentBlockHash: bigint | null;
      tokenIds: Uint32Array;
      blockSize: number;
      loraName: string | null;
      medium: KvMedium;
    }
  | { type: 'BlockRemoved'; blockHashes: BigUint64Array; medium: KvMedium }
  | { type: 'AllBlocksCleared' };

export type BlockStoredEvent = Extract<KvEvent, { type: 'BlockStored' }>;
export type BlockRemovedEvent = Extract<KvEvent, { type: 'BlockRemoved' }>;

/** Where a u64's low and high 32-bit halves sit in a Uint32Array view of a BigUint64Array. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
export const LO_WORD = LITTLE_ENDIAN ? 0 : 1;
export const HI_WORD = LITTLE_ENDIAN ? 1 : 0;

/**
 * The events of one step, in order. Evictions come one block at a time: consecutive ones from the
 * same medium are gathered into one BlockRemoved (as 32-bit halves, no BigInt per block), which is
 * closed as soon as another event follows, so the order of the stream is kept.
 */
export class EventLog {
  private events: KvEvent[] = [];
  /**
   * `keeps` false: a log that drops everything (an engine whose events nobody reads, e.g. a
   * replayed policy that never looks at the index): no event is built, take() is always empty.
   */
  constructor(readonly keeps = true) {}

  /** Pending removals as u64 words in memory order (LO_WORD / HI_WORD per hash). */
  private removed = new Uint32Array(256);
  private removedCount = 0;
  private removedMedium: KvMedium = 'GPU';

  /** A block under the hash with halves (hi, lo) was evicted from `medium`. */
  removedBlock(hi: number, lo: number, medium: KvMedium = 'GPU'): void {
    if (!this.keeps) return;
    if (medium !== this.removedMedium) {
      this.closeRemoved();
      this.removedMedium = medium;
    }
    const at = 2 * this.removedCount;
    if (at === this.removed.length) {
      const grown = new Uint32Array(this.removed.length * 2);
      grown.set(this.removed);
      this.removed = grown;
    }
    this.removed[at + LO_WORD] = lo;
    this.removed[at + HI_WORD] = hi;
    this.removedCount++;
  }

  /** Blocks under hashes[0, count) were evicted from the GPU, in that order. */
  removedHashes(hashes: BigUint64Array, count: number): void {
    if (!this.keeps || count === 0) return;
    if (this.removedMedium !== 'GPU') {
      this.closeRemoved();
      this.removedMedium = 'GPU';
    }
    const at = 2 * this.removedCount;
    if (at + 2 * count > this.removed.length) {
      const grown = new Uint32Array(Math.max(2 * this.removed.length, at + 2 * count));
      grown.set(this.removed.subarray(0, at));
      this.removed = grown;
    }
    this.removed.set(new Uint32Array(hashes.buffer, hashes.byteOffset, 2 * count), at);
    this.removedCount += count;
  }

  push(event: KvEvent): void {
    if (!this.keeps) return;
    this.closeRemoved();
    this.events.push(event);
  }

  /** The events logged since the last take, in order; the log starts empty again. */
  take(): KvEvent[] {
    this.closeRemoved();
    if (this.events.length === 0) return [];
    const out = this.events;
    this.events = [];
    return out;
  }

  private closeRemoved(): void {
    const n = this.removedCount;
    if (n === 0) return;
    const hashes = new BigUint64Array(n);
    new Uint32Array(hashes.buffer).set(this.removed.subarray(0, 2 * n));
    this.events.push({ type: 'BlockRemoved', blockHashes: hashes, medium: this.removedMedium });
    this.removedCount = 0;
  }
}

/** Applies the events about `medium` (default the GPU) to a set of block hashes: the consumer's view of that tier. */
export function applyEventsToSet(set: Set<bigint>, events: readonly KvEvent[], medium: KvMedium = 'GPU'): void {
  for (const ev of events) {
    if (ev.type === 'BlockStored') {
      if (ev.medium === medium) for (const h of ev.blockHashes) set.add(h);
    } else if (ev.type === 'BlockRemoved') {
      if (ev.medium === medium) for (const h of ev.blockHashes) set.delete(h);
    } else set.clear();
  }
}
