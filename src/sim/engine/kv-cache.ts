// The paged KV cache: a fixed pool of blocks with reference counts. A complete block may be
// registered under its content hash (prefix caching); a registered block nobody references stays
// cached in an LRU list and is evicted (BlockRemoved) only when a fresh block is needed and no
// never-registered free block is left. Invariant: a hash maps to at most one block, and a block is
// in exactly one of {referenced, LRU (registered, ref 0), free stack (unregistered, ref 0)}.
import { type KvEvent, pushRemoved } from './events.js';
import { BlockHashIndex } from './hash-index.js';

const NONE = -1;

export class KvCache {
  readonly totalBlocks: number;
  private readonly refs: Int32Array;
  /** A registered block's hash (for events), and its two halves (the index's key). */
  private readonly hashOf: (bigint | undefined)[];
  private readonly hashHi: Int32Array;
  private readonly hashLo: Int32Array;
  private readonly byHash = new BlockHashIndex();
  // LRU of registered blocks with ref 0: head = evicted first.
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
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
    this.refs = new Int32Array(totalBlocks);
    this.hashOf = new Array<bigint | undefined>(totalBlocks).fill(undefined);
    this.hashHi = new Int32Array(totalBlocks);
    this.hashLo = new Int32Array(totalBlocks);
    this.prev = new Int32Array(totalBlocks).fill(NONE);
    this.next = new Int32Array(totalBlocks).fill(NONE);
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
    return this.hashOf[block] !== undefined;
  }

  refCount(block: number): number {
    return this.refs[block];
  }

  /** Takes a reference on a block (a prefix hit takes it out of the LRU). */
  acquire(block: number): void {
    if (this.refs[block]++ === 0) {
      this.used++;
      this.unlinkLru(block);
    }
  }

  /**
   * A fresh block, or -1 when none is available. Evicting a cached block appends its BlockRemoved
   * to `events`.
   */
  allocate(events: KvEvent[]): number {
    let block: number;
    if (this.freeTop > 0) {
      block = this.freeStack[--this.freeTop];
    } else if (this.lruHead !== NONE) {
      block = this.lruHead;
      this.unlinkLru(block);
      const hash = this.hashOf[block]!;
      this.byHash.delete(this.hashHi[block], this.hashLo[block]);
      this.hashOf[block] = undefined;
      this.evictedTotal++;
      pushRemoved(events, hash);
    } else {
      return NONE;
    }
    this.refs[block] = 1;
    this.used++;
    return block;
  }

  /** Drops a reference; an unreferenced block stays cached (LRU tail) when registered. */
  release(block: number): void {
    const r = --this.refs[block];
    if (r > 0) return;
    if (r < 0) throw new Error(`KV block ${block} released more often than acquired`);
    this.used--;
    if (this.hashOf[block] !== undefined) this.linkLruTail(block);
    else this.freeStack[this.freeTop++] = block;
  }

  /**
   * Registers a referenced, unregistered block under a hash no other block has. `hi` and `lo` are
   * the hash's halves, when the caller has them already.
   */
  register(block: number, hash: bigint, hi = hiOf(hash), lo = loOf(hash)): void {
    if (this.hashOf[block] !== undefined || this.byHash.get(hi, lo) !== NONE || this.refs[block] === 0) {
      throw new Error(`KV block ${block} cannot be registered under ${hash}`);
    }
    this.hashOf[block] = hash;
    this.hashHi[block] = hi;
    this.hashLo[block] = lo;
    this.byHash.add(hi, lo, block);
  }

  /** Forgets every hash (reset_prefix_cache): cached free blocks become plain free blocks. */
  clear(): void {
    this.hashOf.fill(undefined);
    this.byHash.clear();
    while (this.lruHead !== NONE) {
      const block = this.lruHead;
      this.unlinkLru(block);
      this.freeStack[this.freeTop++] = block;
    }
  }

  /** The registered hashes (for tests and consistency checks). */
  *cachedHashes(): IterableIterator<bigint> {
    for (const hash of this.hashOf) if (hash !== undefined) yield hash;
  }

  private linkLruTail(block: number): void {
    this.prev[block] = this.lruTail;
    this.next[block] = NONE;
    if (this.lruTail === NONE) this.lruHead = block;
    else this.next[this.lruTail] = block;
    this.lruTail = block;
    this.lruSize++;
  }

  /** Removes a block from the LRU if it is there. */
  private unlinkLru(block: number): void {
    const p = this.prev[block];
    const n = this.next[block];
    if (p === NONE && n === NONE && this.lruHead !== block) return;
    if (p === NONE) this.lruHead = n;
    else this.next[p] = n;
    if (n === NONE) this.lruTail = p;
    else this.prev[n] = p;
    this.prev[block] = NONE;
    this.next[block] = NONE;
    this.lruSize--;
  }
}

const hiOf = (hash: bigint): number => Number(hash >> 32n);
const loOf = (hash: bigint): number => Number(hash & 0xffff_ffffn);
