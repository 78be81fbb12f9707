// A sequence's blocks in the shared KV cache: prefix matching at admission, growth as tokens are
// scheduled, caching of blocks as they fill (with deduplication against an identical cached block),
// and freeing. Every BlockStored names a parent that is cached at that moment.
import type { KvCache } from './kv-cache.js';
import type { EventLog } from './events.js';
import type { OffloadTier } from './offload-tier.js';
import type { Sequence } from './request.js';

export class BlockTables {
  private readonly scratch = new Uint32Array(2);
  private readonly matched: number[] = [];
  private readonly offloaded: number[] = [];
  /** Where commitFull keeps what its prefetching loads read, so that they are not optimised away. */
  private touched = 0;

  constructor(
    private readonly cache: KvCache,
    readonly blockSize: number,
    /** The CPU tier, whose copies of registered blocks this table describes; null: none. */
    private readonly offload: OffloadTier | null = null,
  ) {}

  /**
   * The longest run of leading blocks of the sequence's tokens that is cached, leaving at least one
   * token to compute. Returns the blocks (not yet acquired) in a reused array.
   */
  matchPrefix(seq: Sequence): readonly number[] {
    const limit = Math.floor((seq.numTokens - 1) / this.blockSize);
    seq.ensureHashes(limit, this.blockSize, this.scratch);
    const out = this.matched;
    out.length = 0;
    for (let i = 0; i < limit; i++) {
      const block = this.cache.lookup(seq.hashHi(i), seq.hashLo(i));
      if (block < 0) break;
      out.push(block);
    }
    return out;
  }

  /**
   * The CPU slots of the blocks that follow the sequence's first `from` blocks (its GPU prefix) on
   * the CPU tier, consecutively, leaving at least one token to compute; in a reused array.
   */
  matchOffloaded(seq: Sequence, from: number): readonly number[] {
    const out = this.offloaded;
    out.length = 0;
    const offload = this.offload;
    if (offload === null || offload.size === 0) return out;
    const limit = Math.floor((seq.numTokens - 1) / this.blockSize);
    for (let i = from; i < limit; i++) {
      const slot = offload.find(seq.hashHi(i), seq.hashLo(i));
      if (slot < 0) break;
      out.push(slot);
    }
    return out;
  }

  /** Matched blocks that an admission would take out of the evictable pool. */
  evictableAmong(blocks: readonly number[]): number {
    let n = 0;
    for (const b of blocks) if (this.cache.refCount(b) === 0) n++;
    return n;
  }

  /** Fresh blocks needed so that the sequence can hold `tokens` tokens. */
  blocksNeeded(seq: Sequence, tokens: number, heldAlready = seq.blocks.length): number {
    return Math.max(0, Math.ceil(tokens / this.blockSize) - heldAlready);
  }

  /** Starts a (re)admitted sequence's table with the matched prefix. */
  adoptPrefix(seq: Sequence, blocks: readonly number[]): void {
    for (const b of blocks) this.cache.acquire(b);
    // One copy of the right size (pushed one by one, the table's array was reallocated as it grew).
    if (seq.blocks.length === 0) seq.blocks = blocks.slice();
    else for (const b of blocks) seq.blocks.push(b);
    seq.committedBlocks = blocks.length;
    seq.numComputed = blocks.length * this.blockSize;
    seq.chainBroken = false;
  }

  /** Grows the table to hold `tokens` tokens; false (nothing taken) when the cache cannot. */
  grow(seq: Sequence, tokens: number, events: EventLog): boolean {
    const need = this.blocksNeeded(seq, tokens);
    if (need === 0) return true;
    if (need > this.cache.availableBlocks) return false;
    this.cache.allocateMany(need, seq.blocks, events);
    return true;
  }

  /** Releases every block, last block first (so a sequence's tail is evicted before its head). */
  free(seq: Sequence): void {
    const blocks = seq.blocks;
    for (let i = blocks.length - 1; i >= 0; i--) this.cache.release(blocks[i]);
    blocks.length = 0;
    seq.committedBlocks = 0;
    seq.numComputed = 0;
  }

  /**
   * Offers the sequence's newly completed blocks to the prefix cache: a block whose content is
   * already cached is swapped for the cached copy (its own block is freed), otherwise it is
   * registered and announced. Consecutive announcements form one BlockStored, whose hashes and
   * tokens are views of the sequence's buffers.
   */
  commitFull(seq: Sequence, events: EventLog): void {
    const bs = this.blockSize;
    const full = Math.floor(seq.numComputed / bs);
    if (full <= seq.committedBlocks) return;
    const first = seq.committedBlocks;
    seq.committedBlocks = full;
    // After a reset the earlier blocks are no longer cached: these cannot be chained to them.
    if (seq.chainBroken) return;
    seq.ensureHashes(full, bs, this.scratch);
    if (full - first > 1) {
      let touched = 0;
      for (let i = first; i < full; i++) touched ^= this.cache.touch(seq.hashLo(i));
      this.touched = touched;
    }
    let runStart = -1;
    for (let i = first; i < full; i++) {
      const hi = seq.hashHi(i);
      const lo = seq.hashLo(i);
      const existing = this.cache.registerUnlessCached(seq.blocks[i], hi, lo);
      if (existing >= 0) {
        if (runStart >= 0) this.announce(seq, runStart, i, events);
        runStart = -1;
        if (existing !== seq.blocks[i]) {
          this.cache.acquire(existing);
          this.cache.release(seq.blocks[i]);
          seq.blocks[i] = existing;
        }
        continue;
      }
      if (runStart < 0) runStart = i;
      if (this.offload !== null) {
        const parent = i > 0;
        this.offload.describe(seq.blocks[i], hi, lo, seq.tokenArray(i * bs), seq.tokenOffset(i * bs), parent, parent ? seq.hashHi(i - 1) : 0, parent ? seq.hashLo(i - 1) : 0, seq.loraName);
      }
    }
    if (runStart >= 0) this.announce(seq, runStart, full, events);
  }

  /** One BlockStored for the sequence's blocks [start, end), just registered. */
  private announce(seq: Sequence, start: number, end: number, events: EventLog): void {
    if (!events.keeps) return;
    const bs = this.blockSize;
    events.push({
      type: 'BlockStored',
      blockHashes: seq.hashes.subarray(start, end),
      parentBlockHash: start === 0 ? null : seq.hashes[start - 1],
      tokenIds: seq.tokenRange(start * bs, end * bs),
      blockSize: bs,
      loraName: seq.loraName,
      medium: 'GPU',
    });
  }
}
