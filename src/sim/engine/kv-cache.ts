// The paged KV cache: a fixed pool of blocks with reference counts. A complete block may be
// registered under its content hash (prefix caching); a registered block nobody references stays
// cached in the LRU and is evicted (BlockRemoved) only when a fresh block is needed and no
// never-registered free block is left. Invariant: a hash maps to at most one block, and a block
// is in exactly one of {referenced, LRU (registered, ref 0), free stack (unregistered, ref 0)}.
//
// The blocks' state lives in the addon (src/core/engine-cache.ts, native/src/sim_cache.rs): a
// replay does millions of block operations per policy over caches of megabytes, whose cost is
// cache misses; there they run over 16-byte records with prefetching, a run of blocks per call.
// This class adds what the engine does around them: the CPU tier that evicted blocks move to,
// and the events.
import { CacheStat, EngineBlockCache } from '../../core/engine-cache.js';
import { toU64 } from './block-hash.js';
import type { EventLog } from './events.js';
import type { OffloadTier } from './offload-tier.js';

const NONE = -1;

export class KvCache {
  private readonly blocks: EngineBlockCache;
  private readonly stats: Float64Array;
  /** The evicted blocks' hashes of an allocation (when someone reads them), grown as needed. */
  private removed = new BigUint64Array(64);
  /** A one-block run, for the single-block calls. */
  private readonly one = new Int32Array(1);

  /** `offload`: where evicted blocks go (the CPU tier), or null (they are dropped). */
  constructor(
    readonly totalBlocks: number,
    private readonly offload: OffloadTier | null = null,
  ) {
    this.blocks = new EngineBlockCache(totalBlocks);
    this.stats = this.blocks.stats;
  }

  /** Blocks with at least one reference. */
  get usedBlocks(): number {
    return this.stats[CacheStat.used];
  }

  /** Blocks that an allocation can take (free, or cached and unreferenced). */
  get availableBlocks(): number {
    return this.stats[CacheStat.available];
  }

  get cachedBlocks(): number {
    return this.stats[CacheStat.cached];
  }

  get evictions(): number {
    return this.stats[CacheStat.evictions];
  }

  /** The block registered under the hash whose halves are (hi, lo), or -1. */
  lookup(hi: number, lo: number): number {
    return this.blocks.lookup(hi, lo);
  }

  /** The block registered under `hash`, or -1. */
  find(hash: bigint): number {
    return this.blocks.lookup(hiOf(hash), loOf(hash));
  }

  isRegistered(block: number): boolean {
    return this.blocks.isRegistered(block);
  }

  refCount(block: number): number {
    return this.blocks.refCount(block);
  }

  /** Takes a reference on a block (a prefix hit takes it out of the LRU). */
  acquire(block: number): void {
    this.one[0] = block;
    this.blocks.acquire(this.one, 0, 1);
  }

  /** Takes a reference on each of blocks[from, to). */
  acquireRun(blocks: Int32Array, from: number, to: number): void {
    this.blocks.acquire(blocks, from, to);
  }

  /** A fresh block, or -1 when none is available. Evicting a cached block logs its BlockRemoved in `events`. */
  allocate(events: EventLog): number {
    if (this.availableBlocks === 0) return NONE;
    this.allocateMany(1, this.one, 0, events);
    return this.one[0];
  }

  /**
   * Writes `count` fresh blocks to out[at, at + count), the blocks `count` allocate() calls would
   * give, with the same evictions logged in the same order; a RangeError (nothing taken) when
   * fewer are available.
   */
  allocateMany(count: number, out: Int32Array, at: number, events: EventLog): void {
    const offload = this.offload;
    // The evicted hashes are read back only by someone who needs them: events or the CPU tier.
    if (!events.keeps && offload === null) {
      this.blocks.allocate(count, out, at);
      return;
    }
    if (this.removed.length < count) this.removed = new BigUint64Array(Math.max(count, 2 * this.removed.length));
    const evicted = this.blocks.allocate(count, out, at, this.removed);
    if (evicted === 0) return;
    // Offloaded before the GPU's removals are logged: a block's parent is still on the GPU when
    // its CPU copy is announced, so a consumer can chain it.
    if (offload !== null) offload.offloadEvicted(out, at + count - evicted, at + count, events);
    events.removedHashes(this.removed, evicted);
  }

  /** Drops a reference; an unreferenced block stays cached (LRU tail) when registered. */
  release(block: number): void {
    this.one[0] = block;
    this.blocks.release(this.one, 0, 1);
  }

  /** Drops a reference on each of blocks[from, to), last block first. */
  releaseRun(blocks: Int32Array, from: number, to: number): void {
    this.blocks.release(blocks, from, to);
  }

  /** Registers a referenced, unregistered block under the hash with halves (hi, lo), which no other block has. */
  register(block: number, hi: number, lo: number): void {
    if (this.registerUnlessCached(block, hi, lo) !== NONE) throw new Error(`KV block ${block} cannot be registered under ${toU64(hi, lo)}: cached already`);
  }

  /**
   * The block cached under (hi, lo) if there is one (nothing changes); otherwise registers `block`
   * (referenced, unregistered) under it and returns -1.
   */
  registerUnlessCached(block: number, hi: number, lo: number): number {
    return this.blocks.registerUnlessCached(block, hi, lo);
  }

  /** register() with the hash as a bigint (tests). */
  registerHash(block: number, hash: bigint): void {
    this.register(block, hiOf(hash), loOf(hash));
  }

  /**
   * Offers a table's blocks[first, end) under hashes[first, end) to the prefix cache: duplicates
   * of a cached block are swapped for it in `blocks`, the others registered (fresh[i - first] =
   * 1). Returns how many were registered.
   */
  commit(blocks: Int32Array, hashes: BigUint64Array, first: number, end: number, fresh: Uint8Array): number {
    return this.blocks.commit(blocks, hashes, first, end, fresh);
  }

  /** The longest cached run of hashes[0, limit), its blocks into `out`; returns its length. */
  match(hashes: BigUint64Array, limit: number, out: Int32Array): number {
    return this.blocks.match(hashes, limit, out);
  }

  /** Of the blocks the last match() found, those nobody references (an admission takes them out of the evictable pool). */
  get lastMatchEvictable(): number {
    return this.stats[CacheStat.lastEvictable];
  }

  /** Forgets every hash (reset_prefix_cache): cached free blocks become plain free blocks. */
  clear(): void {
    this.blocks.clear();
  }

  /** The registered hashes (for tests and consistency checks). */
  cachedHashes(): IterableIterator<bigint> {
    return this.blocks.cachedHashes().values();
  }
}

const hiOf = (hash: bigint): number => Number(hash >> 32n) | 0;
const loOf = (hash: bigint): number => Number(hash & 0xffff_ffffn) | 0;
