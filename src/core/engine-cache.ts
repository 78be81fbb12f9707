// The simulated engine's KV block cache in the addon (native/src/sim_cache.rs): reference counts,
// the hash index, the LRU of cached free blocks and the free stack, driven a run of blocks at a
// time (typed arrays), so the per-block loops of a trace replay run in Rust, with prefetching,
// over compact records. src/sim/engine/kv-cache.ts builds the engine's cache on it. The run calls
// are the addon's hand-written entry points (native/src/bindings/sim_cache.rs: about 0.1 us a
// call); they throw TypeError / RangeError themselves. Every call that changes the cache writes its
// counters into `stats`, which the engine reads without a call.
import { native, type Binding } from './binding.js';
import { callNative } from './errors.js';

interface SimCacheCalls {
  simCacheAllocate(handle: number, stats: Float64Array, count: number, blocks: Int32Array, at: number, removed: BigUint64Array): number;
  simCacheAcquire(handle: number, stats: Float64Array, blocks: Int32Array, from: number, to: number): number;
  simCacheRelease(handle: number, stats: Float64Array, blocks: Int32Array, from: number, to: number): number;
  simCacheCommit(handle: number, stats: Float64Array, blocks: Int32Array, hashes: BigUint64Array, first: number, end: number, fresh: Uint8Array): number;
  simCacheMatch(handle: number, stats: Float64Array, hashes: BigUint64Array, limit: number, out: Int32Array): number;
}

const calls = native as unknown as SimCacheCalls;

/** Where each counter sits in `EngineBlockCache.stats`. */
export const CacheStat = { used: 0, available: 1, cached: 2, evictions: 3, lastEvictable: 4 } as const;

const NO_HASHES = new BigUint64Array(0);

export class EngineBlockCache {
  /** Counters after the last call: indexed by CacheStat. */
  readonly stats = new Float64Array(5);
  private readonly inner: Binding.NativeSimKvCache;
  private readonly handle: number;

  constructor(readonly totalBlocks: number) {
    if (!Number.isInteger(totalBlocks) || totalBlocks < 1 || totalBlocks > 2 ** 30)
      throw new RangeError(`totalBlocks must be an integer in [1, 2^30], got ${totalBlocks}`);
    this.inner = callNative(() => new native.NativeSimKvCache(totalBlocks));
    this.handle = this.inner.handle;
    this.inner.stats(this.stats);
  }

  /**
   * Writes `count` fresh blocks to blocks[at, at + count): never-registered ones first, then the
   * least recently freed cached ones, evicted (a suffix), whose hashes go to `removed[0, evicted)`
   * when it is given. Returns how many were evicted; a RangeError (nothing taken) when fewer than
   * `count` are available.
   */
  allocate(count: number, blocks: Int32Array, at: number, removed: BigUint64Array = NO_HASHES): number {
    return calls.simCacheAllocate(this.handle, this.stats, count, blocks, at, removed);
  }

  /** A reference on each of blocks[from, to). */
  acquire(blocks: Int32Array, from: number, to: number): void {
    calls.simCacheAcquire(this.handle, this.stats, blocks, from, to);
  }

  /** Drops a reference on each of blocks[from, to), last first; a cached block nobody references joins the LRU. */
  release(blocks: Int32Array, from: number, to: number): void {
    calls.simCacheRelease(this.handle, this.stats, blocks, from, to);
  }

  /**
   * Offers blocks[first, end) under hashes[first, end) to the prefix cache: a block whose hash is
   * cached already is replaced in `blocks` by the cached copy (its own released), any other is
   * registered; fresh[i - first] is 1 for the registered ones. Returns how many were registered.
   */
  commit(blocks: Int32Array, hashes: BigUint64Array, first: number, end: number, fresh: Uint8Array): number {
    return calls.simCacheCommit(this.handle, this.stats, blocks, hashes, first, end, fresh);
  }

  /**
   * The longest run of hashes[0, limit) that is cached, its blocks into `out` (not acquired);
   * returns its length. stats[CacheStat.lastEvictable]: how many of them nobody references.
   */
  match(hashes: BigUint64Array, limit: number, out: Int32Array): number {
    return calls.simCacheMatch(this.handle, this.stats, hashes, limit, out);
  }

  /** The block registered under the hash with halves (hi, lo), or -1. */
  lookup(hi: number, lo: number): number {
    return callNative(() => this.inner.lookup(hi >>> 0, lo >>> 0));
  }

  refCount(block: number): number {
    return callNative(() => this.inner.refCount(block));
  }

  isRegistered(block: number): boolean {
    return callNative(() => this.inner.isRegistered(block));
  }

  /** The block cached under (hi, lo) if any (nothing changes), else -1 after registering `block` (referenced, unregistered) under it. */
  registerUnlessCached(block: number, hi: number, lo: number): number {
    return callNative(() => this.inner.registerUnlessCached(block, hi >>> 0, lo >>> 0, this.stats));
  }

  /** Forgets every hash: cached free blocks become plain free blocks. */
  clear(): void {
    callNative(() => this.inner.clear(this.stats));
  }

  /** The registered hashes, in block order. */
  cachedHashes(): BigUint64Array {
    return callNative(() => this.inner.cachedHashes());
  }
}
