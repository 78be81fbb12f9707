// The CPU offload tier: a pool of host-memory blocks beside the GPU's prefix cache, as vLLM's
// OffloadingConnector and Dynamo's KVBM keep one. A registered block the GPU's LRU evicts moves
// here (BlockStored with medium CPU, then the GPU's BlockRemoved), a prefix found here is reloaded
// to the GPU instead of recomputed, and when the pool is full its own LRU evicts (BlockRemoved with
// medium CPU). A block reloaded to the GPU keeps its CPU copy (the copy is what was read), so a
// later GPU eviction of it refreshes that copy instead of storing it again.
//
// Events about CPU blocks describe themselves as the GPU's do (vLLM's self-describing offloading
// events: the engine's block hash, its parent's hash, its token ids, the LoRA name), so a router
// can chain them to the prefix they extend. A GPU block's contents are recorded when it is
// registered: by the time it is evicted, the sequence that filled it may be gone. A CPU slot keeps
// only the block's hash: a reload copies the prompt's own tokens, so the bytes are not modelled.
import { toU64 } from './block-hash.js';
import type { EventLog } from './events.js';
import { BlockHashIndex } from './hash-index.js';
import { LruQueue } from './lru-queue.js';

const NONE = -1;

// A GPU block's record: its hash and its parent's, from block * FIELDS. A CPU slot's: its hash, from slot * 2.
const HASH_HI = 0;
const HASH_LO = 1;
const PARENT_HI = 2;
const PARENT_LO = 3;
const HAS_PARENT = 4;
const FIELDS = 5;

export class OffloadTier {
  /** Blocks offloaded to the CPU (stores, not refreshes) and evicted from it. */
  stored = 0;
  evicted = 0;
  // What each GPU block holds: its hash, its parent's, its tokens and LoRA name.
  private readonly gpu: Int32Array;
  private readonly gpuTokens: Uint32Array;
  private readonly gpuLora: Array<string | null>;
  // The CPU pool's slots: each one's hash halves.
  private readonly slots: Int32Array;
  private readonly byHash: BlockHashIndex;
  private readonly lru: LruQueue;
  private readonly free: Int32Array;
  private freeTop: number;

  constructor(
    readonly capacity: number,
    gpuBlocks: number,
    private readonly blockSize: number,
  ) {
    this.gpu = new Int32Array(gpuBlocks * FIELDS);
    this.gpuTokens = new Uint32Array(gpuBlocks * blockSize);
    this.gpuLora = new Array<string | null>(gpuBlocks).fill(null);
    this.slots = new Int32Array(capacity * 2);
    this.byHash = new BlockHashIndex(capacity, { records: this.slots, stride: 2, offset: 0 });
    this.lru = new LruQueue(capacity);
    this.free = new Int32Array(capacity);
    for (let i = 0; i < capacity; i++) this.free[i] = capacity - 1 - i;
    this.freeTop = capacity;
  }

  /** Blocks held on the CPU. */
  get size(): number {
    return this.byHash.size;
  }

  /**
   * Records what a GPU block just registered under (hi, lo) holds: `tokens[from, from + blockSize)`,
   * its parent's hash halves (ignored when `hasParent` is false: a first block) and its LoRA name.
   */
  describe(
    block: number,
    hi: number,
    lo: number,
    tokens: Uint32Array,
    from: number,
    hasParent: boolean,
    parentHi: number,
    parentLo: number,
    lora: string | null,
  ): void {
    const at = block * FIELDS;
    this.gpu[at + HASH_HI] = hi;
    this.gpu[at + HASH_LO] = lo;
    this.gpu[at + HAS_PARENT] = hasParent ? 1 : 0;
    this.gpu[at + PARENT_HI] = parentHi;
    this.gpu[at + PARENT_LO] = parentLo;
    this.gpuTokens.set(tokens.subarray(from, from + this.blockSize), block * this.blockSize);
    this.gpuLora[block] = lora;
  }

  /**
   * The GPU evicts `blocks[from, to)`, registered blocks in eviction order: each moves to the CPU,
   * or refreshes the copy already there. A sequence's blocks leave tail first, so a run of blocks
   * each the parent of the one before is announced as one BlockStored with medium CPU, head first
   * (one parent for a router to resolve, as an engine offloading a request's blocks together
   * announces them), after the CPU evictions that make room for it.
   */
  offloadEvicted(blocks: ArrayLike<number>, from: number, to: number, events: EventLog): void {
    const g = this.gpu;
    let i = from;
    while (i < to) {
      const first = blocks[i] * FIELDS;
      const held = this.byHash.get(g[first + HASH_HI], g[first + HASH_LO]);
      if (held !== NONE) {
        this.touch(held);
        i++;
        continue;
      }
      // The run: each next block is the parent of the one before, not on the CPU yet, at most a full pool.
      let end = i + 1;
      while (end < to && end - i < this.capacity) {
        const prev = blocks[end - 1] * FIELDS;
        const next = blocks[end] * FIELDS;
        if (g[prev + HAS_PARENT] === 0 || g[prev + PARENT_HI] !== g[next + HASH_HI] || g[prev + PARENT_LO] !== g[next + HASH_LO]) break;
        if (this.byHash.get(g[next + HASH_HI], g[next + HASH_LO]) !== NONE) break;
        end++;
      }
      this.storeRun(blocks, i, end, events);
      i = end;
    }
  }

  /** Stores `blocks[from, to)` (tail first, a chain) in the CPU pool and announces them head first. */
  private storeRun(blocks: ArrayLike<number>, from: number, to: number, events: EventLog): void {
    const n = to - from;
    while (this.freeTop < n) this.evictOldest(events);
    const bs = this.blockSize;
    const hashes = new BigUint64Array(n);
    const tokens = new Uint32Array(n * bs);
    const g = this.gpu;
    const s = this.slots;
    for (let k = 0; k < n; k++) {
      const block = blocks[from + k];
      const at = block * FIELDS;
      const slot = this.free[--this.freeTop];
      s[2 * slot] = g[at + HASH_HI];
      s[2 * slot + 1] = g[at + HASH_LO];
      this.byHash.add(g[at + HASH_HI], g[at + HASH_LO], slot);
      // Tail first into the LRU: a prefix's head stays the most recently used.
      this.lru.push(slot);
      // Head first in the event.
      const pos = n - 1 - k;
      hashes[pos] = toU64(g[at + HASH_HI], g[at + HASH_LO]);
      tokens.set(this.gpuTokens.subarray(block * bs, (block + 1) * bs), pos * bs);
    }
    this.stored += n;
    const head = blocks[to - 1] * FIELDS;
    events.push({
      type: 'BlockStored',
      blockHashes: hashes,
      parentBlockHash: g[head + HAS_PARENT] === 0 ? null : toU64(g[head + PARENT_HI], g[head + PARENT_LO]),
      tokenIds: tokens,
      blockSize: bs,
      loraName: this.gpuLora[blocks[to - 1]],
      medium: 'CPU',
    });
  }

  /** The CPU slot holding the block under (hi, lo), or -1. */
  find(hi: number, lo: number): number {
    return this.byHash.get(hi, lo);
  }

  /** Marks a slot most recently used (a reload read it, or the GPU evicted its block again). */
  touch(slot: number): void {
    this.lru.remove(slot);
    this.lru.push(slot);
  }

  /** Forgets every block (reset_prefix_cache; the caller reports AllBlocksCleared). */
  clear(): void {
    for (let slot = this.lru.shift(); slot !== NONE; slot = this.lru.shift()) this.free[this.freeTop++] = slot;
    this.byHash.clear();
  }

  /** The hashes held on the CPU (for tests and consistency checks). */
  *hashes(): IterableIterator<bigint> {
    for (let slot = 0; slot < this.capacity; slot++) {
      if (this.lru.has(slot)) yield toU64(this.slots[2 * slot], this.slots[2 * slot + 1]);
    }
  }

  private evictOldest(events: EventLog): void {
    const slot = this.lru.shift();
    const hi = this.slots[2 * slot];
    const lo = this.slots[2 * slot + 1];
    this.byHash.delete(hi, lo);
    events.removedBlock(hi, lo, 'CPU');
    this.free[this.freeTop++] = slot;
    this.evicted++;
  }
}
