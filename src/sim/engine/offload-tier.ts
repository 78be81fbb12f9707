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
// registered: by the time it is evicted, the sequence that filled it may be gone.
import { toU64 } from './block-hash.js';
import type { EventLog } from './events.js';
import { BlockHashIndex } from './hash-index.js';
import { LruQueue } from './lru-queue.js';

const NONE = -1;

// A block's hash and its parent's (a GPU block's record, or a CPU slot's), from block * FIELDS.
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
  // What each GPU block holds: parent hash (HASH_* unused) and tokens, and LoRA name.
  private readonly gpu: Int32Array;
  private readonly gpuTokens: Uint32Array;
  private readonly gpuLora: Array<string | null>;
  // The CPU pool's slots: hash, parent hash, tokens, LoRA name.
  private readonly slots: Int32Array;
  private readonly slotTokens: Uint32Array;
  private readonly slotLora: Array<string | null>;
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
    this.slots = new Int32Array(capacity * FIELDS);
    this.slotTokens = new Uint32Array(capacity * blockSize);
    this.slotLora = new Array<string | null>(capacity).fill(null);
    this.byHash = new BlockHashIndex(capacity);
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
   * Records what a GPU block just registered holds: `tokens[from, from + blockSize)`, its parent's
   * hash halves (ignored when `hasParent` is false: a first block) and its LoRA name.
   */
  describe(block: number, tokens: Uint32Array, from: number, hasParent: boolean, parentHi: number, parentLo: number, lora: string | null): void {
    const at = block * FIELDS;
    this.gpu[at + HAS_PARENT] = hasParent ? 1 : 0;
    this.gpu[at + PARENT_HI] = parentHi;
    this.gpu[at + PARENT_LO] = parentLo;
    this.gpuTokens.set(tokens.subarray(from, from + this.blockSize), block * this.blockSize);
    this.gpuLora[block] = lora;
  }

  /**
   * The GPU evicts `block`, registered under (hi, lo): its contents move to the CPU (a BlockStored
   * with medium CPU, after any CPU evictions that make room), or refresh the copy already there.
   */
  offload(block: number, hi: number, lo: number, events: EventLog): void {
    const held = this.byHash.get(hi, lo);
    if (held !== NONE) {
      this.touch(held);
      return;
    }
    if (this.freeTop === 0) this.evictOldest(events);
    const slot = this.free[--this.freeTop];
    const from = block * FIELDS;
    const to = slot * FIELDS;
    const s = this.slots;
    s[to + HASH_HI] = hi;
    s[to + HASH_LO] = lo;
    s[to + PARENT_HI] = this.gpu[from + PARENT_HI];
    s[to + PARENT_LO] = this.gpu[from + PARENT_LO];
    s[to + HAS_PARENT] = this.gpu[from + HAS_PARENT];
    const bs = this.blockSize;
    this.slotTokens.set(this.gpuTokens.subarray(block * bs, (block + 1) * bs), slot * bs);
    this.slotLora[slot] = this.gpuLora[block];
    this.byHash.add(hi, lo, slot);
    this.lru.push(slot);
    this.stored++;
    events.push({
      type: 'BlockStored',
      blockHashes: BigUint64Array.of(toU64(hi, lo)),
      parentBlockHash: s[to + HAS_PARENT] === 0 ? null : toU64(s[to + PARENT_HI], s[to + PARENT_LO]),
      // A copy: the slot is reused when the block leaves the CPU, and events stay valid.
      tokenIds: this.slotTokens.slice(slot * bs, (slot + 1) * bs),
      blockSize: bs,
      loraName: this.slotLora[slot],
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
      const at = slot * FIELDS;
      if (this.lru.has(slot)) yield toU64(this.slots[at + HASH_HI], this.slots[at + HASH_LO]);
    }
  }

  private evictOldest(events: EventLog): void {
    const slot = this.lru.shift();
    const at = slot * FIELDS;
    const hi = this.slots[at + HASH_HI];
    const lo = this.slots[at + HASH_LO];
    this.byHash.delete(hi, lo);
    events.removedBlock(hi, lo, 'CPU');
    this.free[this.freeTop++] = slot;
    this.evicted++;
  }
}

const u64 = (hi: number, lo: number): bigint => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
