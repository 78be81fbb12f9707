// A sequence's blocks in the shared KV cache: prefix matching at admission, growth as tokens are
// scheduled, caching of blocks as they fill (with deduplication against an identical cached block),
// and freeing. Every BlockStored names a parent that is cached at that moment.
import type { KvCache } from './kv-cache.js';
import type { EventLog } from './events.js';
import type { OffloadTier } from './offload-tier.js';
import type { Sequence } from './request.js';

export class BlockTables {
  private readonly scratch = new Uint32Array(2);
  /** matchPrefix's result (a view of it), and commitFull's flags: scratch grown as needed. */
  private matched = new Int32Array(64);
  private fresh = new Uint8Array(64);
  private readonly offloaded: number[] = [];

  constructor(
    private readonly cache: KvCache,
    readonly blockSize: number,
    /** The CPU tier, whose copies of registered blocks this table describes; null: none. */
    private readonly offload: OffloadTier | null = null,
  ) {}

  /**
   * The longest run of leading blocks of the sequence's tokens that is cached, leaving at least one
   * token to compute. Returns the blocks (not yet acquired): a view of a reused array, valid until
   * the next call.
   */
  matchPrefix(seq: Sequence): Int32Array {
    const limit = Math.floor((seq.numTokens - 1) / this.blockSize);
    seq.ensureHashes(limit, this.blockSize, this.scratch);
    if (this.matched.length < limit) this.matched = new Int32Array(Math.max(limit, 2 * this.matched.length));
    return this.matched.subarray(0, this.cache.match(seq.hashes, limit, this.matched));
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

  /** Of the blocks the last matchPrefix found, those an admission would take out of the evictable pool. */
  lastMatchEvictable(): number {
    return this.cache.lastMatchEvictable;
  }

  /** Fresh blocks needed so that the sequence can hold `tokens` tokens. */
  blocksNeeded(seq: Sequence, tokens: number, heldAlready = seq.blockCount): number {
    return Math.max(0, Math.ceil(tokens / this.blockSize) - heldAlready);
  }

  /** Starts a (re)admitted sequence's table with the matched prefix (appended to an empty table). */
  adoptPrefix(seq: Sequence, blocks: Int32Array): void {
    const n = blocks.length;
    this.cache.acquireRun(blocks, 0, n);
    seq.reserveBlocks(seq.blockCount + n);
    seq.table.set(blocks, seq.blockCount);
    seq.blockCount += n;
    seq.committedBlocks = n;
    seq.numComputed = n * this.blockSize;
    seq.chainBroken = false;
  }

  /** Grows the table to hold `tokens` tokens; false (nothing taken) when the cache cannot. */
  grow(seq: Sequence, tokens: number, events: EventLog): boolean {
    const need = this.blocksNeeded(seq, tokens);
    if (need === 0) return true;
    if (need > this.cache.availableBlocks) return false;
    seq.reserveBlocks(seq.blockCount + need);
    this.cache.allocateMany(need, seq.table, seq.blockCount, events);
    seq.blockCount += need;
    return true;
  }

  /** Releases every block, last block first (so a sequence's tail is evicted before its head). */
  free(seq: Sequence): void {
    if (seq.blockCount > 0) this.cache.releaseRun(seq.table, 0, seq.blockCount);
    seq.blockCount = 0;
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
    if (this.fresh.length < full - first) this.fresh = new Uint8Array(Math.max(full - first, 2 * this.fresh.length));
    const fresh = this.fresh;
    const registered = this.cache.commit(seq.table, seq.hashes, first, full, fresh);
    // Runs of registered blocks are announced (and described to the CPU tier) only when someone reads them.
    if (registered === 0 || (!events.keeps && this.offload === null)) return;
    let runStart = -1;
    for (let i = first; i < full; i++) {
      if (fresh[i - first] === 0) {
        if (runStart >= 0) this.announce(seq, runStart, i, events);
        runStart = -1;
        continue;
      }
      if (runStart < 0) runStart = i;
      if (this.offload !== null) {
        const parent = i > 0;
        this.offload.describe(
          seq.table[i],
          seq.hashHi(i),
          seq.hashLo(i),
          seq.tokenArray(i * bs),
          seq.tokenOffset(i * bs),
          parent,
          parent ? seq.hashHi(i - 1) : 0,
          parent ? seq.hashLo(i - 1) : 0,
          seq.loraName,
        );
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
