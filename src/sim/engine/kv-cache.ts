// The paged KV cache: a fixed pool of blocks with reference counts. A complete block may be
// registered under its content hash (prefix caching); a registered block nobody references stays
// cached in the LRU (lru-queue.ts) and is evicted (BlockRemoved) only when a fresh block is needed
// and no never-registered free block is left. Invariant: a hash maps to at most one block, and a
// block is in exactly one of {referenced, LRU (registered, ref 0), free stack (unregistered, ref 0)}.
//
// Layout: everything else the cache knows about a block sits in one 16-byte record of
// BLOCK_FIELDS int32s (reference count, registered flag, hash halves), so touching a block
// (allocate, acquire, release, evict) costs one cache line, not one per field: a replay does this
// a few million times per policy over caches of megabytes.
import { toU64 } from './block-hash.js';
import type { EventLog } from './events.js';
import { BlockHashIndex } from './hash-index.js';
import { LruQueue } from './lru-queue.js';
import type { OffloadTier } from './offload-tier.js';

const NONE = -1;

// A block's record: its fields at these offsets from block * BLOCK_FIELDS.
const REFS = 0;
const REGISTERED = 1;
const HASH_HI = 2;
const HASH_LO = 3;
const BLOCK_FIELDS = 4;

export class KvCache {
  readonly totalBlocks: number;
  private readonly blocks: Int32Array;
  private readonly byHash: BlockHashIndex;
  /** Registered blocks with ref 0, evicted oldest first. */
  private readonly lru: LruQueue;
  /** Where allocateMany keeps what its prefetching loads read, so that they are not optimised away. */
  private touched = 0;
  /** allocate()'s scratch for allocateMany. */
  private readonly taken: number[] = [];
  // Unregistered free blocks (nothing to lose by reusing them).
  private readonly freeStack: Int32Array;
  private freeTop = 0;
  private used = 0;
  private evictedTotal = 0;

  /** `offload`: where evicted blocks go (the CPU tier), or null (they are dropped). */
  constructor(
    totalBlocks: number,
    private readonly offload: OffloadTier | null = null,
  ) {
    this.totalBlocks = totalBlocks;
    this.blocks = new Int32Array(totalBlocks * BLOCK_FIELDS);
    this.byHash = new BlockHashIndex(totalBlocks, { records: this.blocks, stride: BLOCK_FIELDS, offset: HASH_HI });
    this.lru = new LruQueue(totalBlocks);
    this.freeStack = new Int32Array(totalBlocks);
    // Block 0 is handed out first.
    for (let i = 0; i < totalBlocks; i++) this.freeStack[i] = totalBlocks - 1 - i;
    this.freeTop = totalBlocks;
  }

  /** Blocks with at least one reference. */
  get usedBlocks(): number {
    return this.used;
  }

  /** Blocks that an allocation can take (free, or cached and unreferenced). */
  get availableBlocks(): number {
    return this.freeTop + this.lru.size;
  }

  get cachedBlocks(): number {
    return this.byHash.size;
  }

  get evictions(): number {
    return this.evictedTotal;
  }

  /** The block registered under the hash whose halves are (hi, lo), or -1. */
  lookup(hi: number, lo: number): number {
    return this.byHash.get(hi, lo);
  }

  /** Fetches the hash index's line for a hash with low half `lo` (see BlockHashIndex.touch). */
  touch(lo: number): number {
    return this.byHash.touch(lo);
  }

  /** The block registered under `hash`, or -1. */
  find(hash: bigint): number {
    return this.byHash.get(hiOf(hash), loOf(hash));
  }

  isRegistered(block: number): boolean {
    return this.blocks[block * BLOCK_FIELDS + REGISTERED] !== 0;
  }

  refCount(block: number): number {
    return this.blocks[block * BLOCK_FIELDS + REFS];
  }

  /** Takes a reference on a block (a prefix hit takes it out of the LRU). */
  acquire(block: number): void {
    const at = block * BLOCK_FIELDS;
    if (this.blocks[at + REFS]++ === 0) {
      this.used++;
      this.lru.remove(block);
    }
  }

  /**
   * A fresh block, or -1 when none is available. Evicting a cached block logs its BlockRemoved
   * in `events`.
   */
  allocate(events: EventLog): number {
    if (this.availableBlocks === 0) return NONE;
    const before = this.taken.length;
    this.allocateMany(1, this.taken, events);
    const block = this.taken[before];
    this.taken.length = before;
    return block;
  }

  /**
   * Appends `count` fresh blocks to `out`, the blocks `count` allocate() calls would give, with
   * the same evictions logged in the same order; a RangeError (nothing taken) when fewer are
   * available. Evictions go in passes, the LRU's oldest blocks taken, their hash-index slots
   * read, then their entries deleted: each pass's loads are independent of each other, so their
   * cache misses overlap instead of adding up.
   */
  allocateMany(count: number, out: number[], events: EventLog): void {
    if (count > this.availableBlocks) throw new RangeError(`${count} KV blocks asked for, ${this.availableBlocks} available`);
    const blocks = this.blocks;
    let n = 0;
    for (; n < count && this.freeTop > 0; n++) {
      const block = this.freeStack[--this.freeTop];
      blocks[block * BLOCK_FIELDS + REFS] = 1;
      out.push(block);
    }
    // Never-cached blocks are gone: the rest are evictions, a suffix of what `out` receives.
    const firstEvicted = out.length;
    for (; n < count; n++) {
      const block = this.lru.shift();
      const at = block * BLOCK_FIELDS;
      blocks[at + REGISTERED] = 0;
      blocks[at + REFS] = 1;
      out.push(block);
    }
    // The deletions' slots first, in a loop of nothing but independent loads (a prefetch).
    let touched = 0;
    for (let i = firstEvicted; i < out.length; i++) touched ^= this.byHash.touch(blocks[out[i] * BLOCK_FIELDS + HASH_LO]);
    this.touched = touched;
    // Offloaded before the GPU's removals are logged: a block's parent is still on the GPU when
    // its CPU copy is announced, so a consumer can chain it.
    const offload = this.offload;
    if (offload !== null) offload.offloadEvicted(out, firstEvicted, out.length, events);
    for (let i = firstEvicted; i < out.length; i++) {
      const at = out[i] * BLOCK_FIELDS;
      const hi = blocks[at + HASH_HI];
      const lo = blocks[at + HASH_LO];
      this.byHash.delete(hi, lo);
      events.removedBlock(hi, lo);
    }
    this.evictedTotal += out.length - firstEvicted;
    this.used += count;
  }

  /** Drops a reference; an unreferenced block stays cached (LRU tail) when registered. */
  release(block: number): void {
    const at = block * BLOCK_FIELDS;
    const r = --this.blocks[at + REFS];
    if (r > 0) return;
    if (r < 0) {
      this.blocks[at + REFS] = 0;
      throw new Error(`KV block ${block} released more often than acquired`);
    }
    this.used--;
    if (this.blocks[at + REGISTERED] !== 0) this.lru.push(block);
    else this.freeStack[this.freeTop++] = block;
  }

  /** Registers a referenced, unregistered block under the hash with halves (hi, lo), which no other block has. */
  register(block: number, hi: number, lo: number): void {
    if (this.registerUnlessCached(block, hi, lo) !== NONE) throw new Error(`KV block ${block} cannot be registered under ${toU64(hi, lo)}: cached already`);
  }

  /**
   * The block cached under (hi, lo) if there is one (nothing changes); otherwise registers `block`
   * (referenced, unregistered) under it and returns -1. One probe of the hash index for both.
   */
  registerUnlessCached(block: number, hi: number, lo: number): number {
    const blocks = this.blocks;
    const at = block * BLOCK_FIELDS;
    if (blocks[at + REGISTERED] !== 0 || blocks[at + REFS] === 0) {
      const cached = this.byHash.get(hi, lo);
      if (cached !== NONE) return cached;
      throw new Error(`KV block ${block} cannot be registered under ${toU64(hi, lo)}: ${blocks[at + REFS] === 0 ? 'not referenced' : 'registered already'}`);
    }
    // The index reads a key's high half from its block's record (an unregistered block's hash fields are unused).
    blocks[at + HASH_HI] = hi;
    const cached = this.byHash.addIfAbsent(hi, lo, block);
    if (cached !== NONE) return cached;
    blocks[at + REGISTERED] = 1;
    blocks[at + HASH_LO] = lo;
    return NONE;
  }

  /** register() with the hash as a bigint (tests). */
  registerHash(block: number, hash: bigint): void {
    this.register(block, hiOf(hash), loOf(hash));
  }

  /** Forgets every hash (reset_prefix_cache): cached free blocks become plain free blocks. */
  clear(): void {
    for (let b = 0; b < this.totalBlocks; b++) this.blocks[b * BLOCK_FIELDS + REGISTERED] = 0;
    this.byHash.clear();
    for (let block = this.lru.shift(); block !== NONE; block = this.lru.shift()) this.freeStack[this.freeTop++] = block;
  }

  /** The registered hashes (for tests and consistency checks). */
  *cachedHashes(): IterableIterator<bigint> {
    for (let b = 0; b < this.totalBlocks; b++) {
      const at = b * BLOCK_FIELDS;
      if (this.blocks[at + REGISTERED] !== 0) yield toU64(this.blocks[at + HASH_HI], this.blocks[at + HASH_LO]);
    }
  }
}

const hiOf = (hash: bigint): number => Number(hash >> 32n) | 0;
const loOf = (hash: bigint): number => Number(hash & 0xffff_ffffn) | 0;
