// The paged KV cache: a fixed pool of blocks with reference counts. A complete block may be
// registered under its content hash (prefix caching); a registered block nobody references stays
// cached in an LRU list and is evicted (BlockRemoved) only when a fresh block is needed and no
// never-registered free block is left. Invariant: a hash maps to at most one block, and a block is
// in exactly one of {referenced, LRU (registered, ref 0), free stack (unregistered, ref 0)}.
//
// Layout: everything the cache knows about a block sits in one record of BLOCK_FIELDS int32s
// (reference count, LRU links, registered flag, hash halves), so touching a block (allocate,
// acquire, release, evict) costs one cache line, not one per field: a replay does this a few
// million times per policy over caches of megabytes.
import { toU64 } from './block-hash.js';
import type { EventLog } from './events.js';
import { BlockHashIndex } from './hash-index.js';

const NONE = -1;

// A block's record: its fields at these offsets from block * BLOCK_FIELDS.
const REFS = 0;
const PREV = 1;
const NEXT = 2;
const REGISTERED = 3;
const HASH_HI = 4;
const HASH_LO = 5;
const BLOCK_FIELDS = 6;

export class KvCache {
  readonly totalBlocks: number;
  private readonly blocks: Int32Array;
  private readonly byHash: BlockHashIndex;
  // LRU of registered blocks with ref 0: head = evicted first.
  private lruHead = NONE;
  private lruTail = NONE;
  private lruSize = 0;
  // Unregistered free blocks (nothing to lose by reusing them).
  private readonly freeStack: Int32Array;
  private freeTop = 0;
  private used = 0;
  private evictedTotal = 0;

  constructor(totalBlocks: number) {
    this.totalBlocks = totalBlocks;
    this.blocks = new Int32Array(totalBlocks * BLOCK_FIELDS);
    this.byHash = new BlockHashIndex(totalBlocks);
    for (let b = 0; b < totalBlocks; b++) {
      this.blocks[b * BLOCK_FIELDS + PREV] = NONE;
      this.blocks[b * BLOCK_FIELDS + NEXT] = NONE;
    }
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
    return this.freeTop + this.lruSize;
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
      this.unlinkLru(block);
    }
  }

  /**
   * A fresh block, or -1 when none is available. Evicting a cached block logs its BlockRemoved
   * in `events`.
   */
  allocate(events: EventLog): number {
    const blocks = this.blocks;
    let block: number;
    if (this.freeTop > 0) {
      block = this.freeStack[--this.freeTop];
    } else if (this.lruHead !== NONE) {
      block = this.lruHead;
      this.unlinkLru(block);
      const at = block * BLOCK_FIELDS;
      const hi = blocks[at + HASH_HI];
      const lo = blocks[at + HASH_LO];
      this.byHash.delete(hi, lo);
      blocks[at + REGISTERED] = 0;
      this.evictedTotal++;
      events.removedBlock(hi, lo);
    } else {
      return NONE;
    }
    blocks[block * BLOCK_FIELDS + REFS] = 1;
    this.used++;
    return block;
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
    if (this.blocks[at + REGISTERED] !== 0) this.linkLruTail(block);
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
    const cached = this.byHash.addIfAbsent(hi, lo, block);
    if (cached !== NONE) return cached;
    blocks[at + REGISTERED] = 1;
    blocks[at + HASH_HI] = hi;
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
    while (this.lruHead !== NONE) {
      const block = this.lruHead;
      this.unlinkLru(block);
      this.freeStack[this.freeTop++] = block;
    }
  }

  /** The registered hashes (for tests and consistency checks). */
  *cachedHashes(): IterableIterator<bigint> {
    for (let b = 0; b < this.totalBlocks; b++) {
      const at = b * BLOCK_FIELDS;
      if (this.blocks[at + REGISTERED] !== 0) yield toU64(this.blocks[at + HASH_HI], this.blocks[at + HASH_LO]);
    }
  }

  private linkLruTail(block: number): void {
    const blocks = this.blocks;
    const at = block * BLOCK_FIELDS;
    blocks[at + PREV] = this.lruTail;
    blocks[at + NEXT] = NONE;
    if (this.lruTail === NONE) this.lruHead = block;
    else blocks[this.lruTail * BLOCK_FIELDS + NEXT] = block;
    this.lruTail = block;
    this.lruSize++;
  }

  /**
   * Removes a block from the LRU if it is there. The head's PREV is never read (the head is
   * recognised as lruHead), so taking the head off, as every eviction does, leaves the new head's
   * stale PREV alone instead of writing into a record the eviction would not touch otherwise.
   */
  private unlinkLru(block: number): void {
    const blocks = this.blocks;
    const at = block * BLOCK_FIELDS;
    const isHead = this.lruHead === block;
    const p = isHead ? NONE : blocks[at + PREV];
    if (p === NONE && !isHead) return;
    const n = blocks[at + NEXT];
    if (isHead) this.lruHead = n;
    else blocks[p * BLOCK_FIELDS + NEXT] = n;
    if (n === NONE) this.lruTail = p;
    else if (!isHead) blocks[n * BLOCK_FIELDS + PREV] = p;
    blocks[at + PREV] = NONE;
    blocks[at + NEXT] = NONE;
    this.lruSize--;
  }
}

const hiOf = (hash: bigint): number => Number(hash >> 32n) | 0;
const loOf = (hash: bigint): number => Number(hash & 0xffff_ffffn) | 0;
