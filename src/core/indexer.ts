// KvIndexer: which (worker, dpRank) pairs hold which KV blocks, as a radix tree in Rust
// (native/src/indexer, whose README states the invariants). Events mode is fed by the engines'
// KV events; approximate mode, for engines without events, by the router's own decisions, which
// expire after a TTL. Time comes from the `clock` option, never read inside the tree.
import { native, type Binding } from './binding.js';
import { callNative, nativeErrorCode, translateNativeError } from './errors.js';
import { EventBatchCounts, eventBatchResult, type EventBatchResult, type IndexerRejections } from './event-batch.js';
import { fast } from './fast-calls.js';
import { copyMatchTriples, MATCH_INTS, readMatches, type OverlapMatch } from './match-buffer.js';
import { blockHashSeed, encodeMultimodal, type HashOptions } from './hashing.js';
import {
  describe,
  expectBigUint64Array,
  expectBlockSize,
  expectDpRank,
  expectInteger,
  expectObject,
  expectOptionalBoolean,
  expectOptionalString,
  expectU64,
  expectUint32Array,
  expectWorkerId,
} from '../util/validate.js';
import { perTierObject, type PerTier } from './tiers.js';
import { INDEXER_MODES, type IndexerMode } from './vocabulary.js';

export type { IndexerMode };
export type { EventBatchResult, EventDecodeError, IndexerRejections } from './event-batch.js';
export type { OverlapMatch } from './match-buffer.js';

export interface KvIndexerOptions {
  /** Tokens per KV block; must equal the engines' block size. */
  blockSize: number;
  /** 'events' (default): fed by KV events. 'approximate': fed by recordRouting, with a TTL. */
  mode?: IndexerMode;
  /** Events mode: cap on indexed (worker, dpRank, block) entries; least recently matched
   * leaves are evicted past it. Off by default (as in Dynamo). */
  maxBlocks?: number;
  /** Approximate mode: how long a routed prompt is assumed to stay cached (120 000 ms). */
  ttlMs?: number;
  /** Approximate mode: cap on indexed entries (2^20), oldest pruned first. */
  approxMaxBlocks?: number;
  /** A cap, once passed, prunes down to this fraction of it (0.8). */
  pruneFraction?: number;
  /**
   * EAGLE engines (Dynamo's `is_eagle`): each block hashes its tokens and the first token of the
   * next block, for stored events (which then carry blocks x blockSize + 1 tokens) and for the
   * prompts of the routing cores built over this index. Default false.
   */
  eagle?: boolean;
  /**
   * Events mode: index blocks the engines report on lower tiers (event medium CPU, disk,
   * external...: host, disk and external tiers) beside the device's, so routing credits a worker
   * that can reload a prefix. Default true; false counts such events in `otherMedia` only.
   */
  lowerTiers?: boolean;
  /** Milliseconds now (Date.now by default; the offline simulator passes a virtual clock). */
  clock?: () => number;
}

export interface IndexerStats {
  /** Indexed (worker, dpRank, block) entries. */
  blocks: number;
  /** Distinct blocks (whatever edges they sit on). */
  nodes: number;
  /** (worker, dpRank) pairs holding at least one block. */
  workers: number;
  /** Heap bytes the index holds (allocated capacity). */
  approxBytes: number;
  bytesPerNode: number;
  bytesPerBlock: number;
  /** Edges of the compressed tree (runs of blocks). */
  edges: number;
  /** Stored events accepted, removed and cleared events. */
  eventsApplied: number;
  /** Approximate mode: routing decisions recorded. */
  routingsRecorded: number;
  rejected: IndexerRejections;
  /** Entries dropped by a cap (events maxBlocks, approximate approxMaxBlocks). */
  evictions: number;
  /** Approximate mode: entries dropped by the TTL. */
  expired: number;
  /** (worker, dpRank, block) entries held on each lower tier (not counted in `blocks`). */
  lowerTierBlocks: PerTier;
}

export interface StoredOptions {
  loraName?: string;
  mmHashes?: HashOptions['mmHashes'];
  /** Where the blocks are, as the event's `medium` (default: the device). */
  medium?: string;
}

export interface RemovedOptions {
  /** Where the blocks were, as the event's `medium` (default: the device). */
  medium?: string;
}

/** Worker ids the fast event calls take (the addon reads them as u32). */
const MAX_U32 = 0xffff_ffff;
/** The parent of a root block, as applyStoredFast reads it. */
const NO_PARENT = new BigUint64Array(0);

/** Blocks accepted per call (events, prompts): a 16M-token prompt at block size 16. */
export const MAX_BLOCKS_PER_CALL = 2 ** 20;

/** A restored native index travelling through the constructor (module-private). */
class Restored {
  constructor(
    readonly nativeIndexer: Binding.NativeIndexer,
    readonly clock: () => number,
  ) {}
}

export class KvIndexer {
  readonly blockSize: number;
  readonly mode: IndexerMode;
  /** Whether blocks hash EAGLE windows (blockSize + 1 tokens). */
  readonly eagle: boolean;
  /** Whether events about lower tiers are indexed (events mode, unless turned off). */
  readonly lowerTiers: boolean;
  /** @internal The addon's index, shared with the routing cores built over this indexer. */
  readonly native: Binding.NativeIndexer;
  /** The index's handle for the addon's fast calls. */
  private readonly handle: number;
  /** A stored event's parent hash, as applyStoredFast reads it. */
  private readonly parentScratch = new BigUint64Array(1);
  private readonly clock: () => number;
  /** Whether a lookup reads the clock: approximate mode expires by it, and a clock the caller
   * passed is called as before; events mode with Date.now skips the call (its time is unused). */
  private readonly matchReadsClock: boolean;
  /** MATCH_INTS per match, written by the addon; grown when a result needs it. */
  private out = new Int32Array(MATCH_INTS * 64);
  /** applyEventBatch's counts, written by the addon. */
  private readonly batchCounts = new EventBatchCounts();

  constructor(opts: KvIndexerOptions) {
    if (opts instanceof Restored) {
      this.native = opts.nativeIndexer;
      this.clock = opts.clock;
    } else {
      if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object with a blockSize, got ${describe(opts)}`);
      const blockSize = expectBlockSize(opts.blockSize);
      const mode = expectMode(opts.mode);
      const maxBlocks = opts.maxBlocks === undefined ? undefined : expectInteger(opts.maxBlocks, 'maxBlocks', 1, Number.MAX_SAFE_INTEGER);
      const ttlMs = opts.ttlMs === undefined ? 120_000 : expectPositive(opts.ttlMs, 'ttlMs');
      const approxMaxBlocks = opts.approxMaxBlocks === undefined ? 2 ** 20 : expectInteger(opts.approxMaxBlocks, 'approxMaxBlocks', 1, Number.MAX_SAFE_INTEGER);
      const pruneFraction = opts.pruneFraction === undefined ? 0.8 : expectFraction(opts.pruneFraction);
      const eagle = expectOptionalBoolean(opts.eagle, 'eagle');
      // Absent: the native default (on in events mode).
      const lowerTiers = opts.lowerTiers === undefined ? undefined : expectOptionalBoolean(opts.lowerTiers, 'lowerTiers');
      if (lowerTiers === true && mode !== 'events') throw new RangeError("lowerTiers needs an indexer in 'events' mode (lower tiers come from KV events)");
      this.clock = expectClock(opts.clock);
      this.native = callNative(() => new native.NativeIndexer({ blockSize, mode, maxBlocks, ttlMs, approxMaxBlocks, pruneFraction, eagle, lowerTiers }));
    }
    this.blockSize = this.native.blockSize;
    this.mode = this.native.mode as IndexerMode;
    this.eagle = this.native.eagle;
    this.lowerTiers = this.native.lowerTiers;
    this.handle = this.native.handle;
    this.matchReadsClock = this.mode !== 'events' || this.clock !== Date.now;
  }

  /**
   * A BlockStored event of (worker, dpRank): `blockHashes` are the engine's names of the blocks
   * (opaque, used only to resolve parents and removals), `tokenIds` their tokens, which the
   * indexer hashes itself. `parentHash` is the engine hash of the first block's parent (null: a
   * root block). Returns false when the event conflicts with the index (unknown parent,
   * duplicate or self-parented hash): nothing is applied and the reason is counted.
   * `opts.medium` puts them on a lower tier (as applyEventBatch maps media); a medium it does
   * not know, or a lower tier when the indexer does not keep them, is a RangeError.
   */
  applyStored(worker: number, dpRank: number, parentHash: bigint | null, blockHashes: BigUint64Array, tokenIds: Uint32Array, opts?: StoredOptions): boolean {
    this.expectMode('events', 'applyStored');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    const parent = parentHash === null || parentHash === undefined ? null : expectU64(parentHash, 'parentHash');
    expectBlocks(blockHashes, 'blockHashes');
    expectUint32Array(tokenIds, 'tokenIds');
    const plus = this.eagle && blockHashes.length > 0 ? ' + 1 (EAGLE)' : '';
    const want = blockHashes.length * this.blockSize + (plus ? 1 : 0);
    if (tokenIds.length !== want) {
      throw new RangeError(
        `tokenIds must hold blockHashes.length x blockSize${plus} = ${blockHashes.length} x ${this.blockSize}${plus} = ${want} tokens, got ${tokenIds.length}`,
      );
    }
    if (opts === undefined && worker <= MAX_U32) {
      // The common event (the device tier, no LoRA, no multimodal content) through the addon's
      // hand-written entry point: a trace replay applies about 80k of them per policy.
      let parentArg = NO_PARENT;
      if (parent !== null) (parentArg = this.parentScratch)[0] = parent;
      const now = this.clock();
      return callNative(() => fast.applyStoredFast(this.handle, worker, dpRank, blockHashes, tokenIds, parentArg, now)) === 1;
    }
    const o = expectObject(opts, 'opts');
    const seed = blockHashSeed(expectOptionalString(o.loraName, 'opts.loraName'));
    const mm = encodeMultimodal(o.mmHashes);
    const medium = expectOptionalString(o.medium, 'opts.medium');
    const now = this.clock();
    return callNative(() => this.native.applyStored(worker, dpRank, parent, blockHashes, tokenIds, seed, mm?.offsets, mm?.hashes, now, medium));
  }

  /**
   * A BlockRemoved event: returns the number of blocks removed (unknown hashes are counted).
   * `opts.medium` as in applyStored: a removal from one tier leaves the others' copies.
   */
  applyRemoved(worker: number, dpRank: number, blockHashes: BigUint64Array, opts?: RemovedOptions): number {
    this.expectMode('events', 'applyRemoved');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    expectBlocks(blockHashes, 'blockHashes');
    if (opts === undefined && worker <= MAX_U32) {
      const now = this.clock();
      return callNative(() => fast.applyRemovedFast(this.handle, worker, dpRank, blockHashes, now));
    }
    const medium = expectOptionalString(expectObject(opts, 'opts').medium, 'opts.medium');
    const now = this.clock();
    return callNative(() => this.native.applyRemoved(worker, dpRank, blockHashes, now, medium));
  }

  /**
   * A KV event batch as the engine published it (msgpack, PROTOCOLS.md section 2), decoded,
   * validated, hashed and applied for (worker, dpRank) in Rust. Never throws for bad bytes: the
   * result says what was applied, refused, skipped or undecodable.
   */
  applyEventBatch(worker: number, dpRank: number, payload: Uint8Array): EventBatchResult {
    this.expectMode('events', 'applyEventBatch');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    expectPayload(payload);
    const counts = this.batchCounts;
    return counts.result(callNative(() => this.native.applyEventBatchInto(worker, dpRank, payload, counts.array)));
  }

  /**
   * applyEventBatch on a libuv thread, for large batches: the event loop goes on while it
   * applies, and lookups wait at most one event for the index. A worker removed meanwhile gets
   * nothing more applied (the result is then `cancelled`).
   *
   * The payload is copied first, unless `opts.inPlace`: then the libuv thread reads the caller's
   * bytes (no copy on the event loop: 1-3 ms for a 10 MB batch), and the caller must leave them
   * alone, neither written nor their buffer transferred, until the promise settles.
   */
  applyEventBatchAsync(worker: number, dpRank: number, payload: Uint8Array, opts?: { inPlace?: boolean }): Promise<EventBatchResult> {
    this.expectMode('events', 'applyEventBatchAsync');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    expectPayload(payload);
    let inPlace = false;
    if (opts !== undefined) {
      const o = expectObject(opts, 'opts');
      if (o.inPlace !== undefined && typeof o.inPlace !== 'boolean') throw new TypeError(`opts.inPlace must be a boolean, got ${describe(o.inPlace)}`);
      inPlace = o.inPlace === true;
    }
    const bytes = inPlace ? payload : new Uint8Array(payload);
    return callNative(() => this.native.applyEventBatchAsync(worker, dpRank, bytes)).then((r) => eventBatchResult(r.counts, r.extras, r.cancelled));
  }

  /** An AllBlocksCleared event: (worker, dpRank) holds nothing any more. */
  applyCleared(worker: number, dpRank: number): void {
    this.expectMode('events', 'applyCleared');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    callNative(() => this.native.applyCleared(worker, dpRank));
  }

  /** Drops every block of every dpRank of `worker` (either mode). */
  removeWorker(worker: number): void {
    expectWorkerId(worker);
    callNative(() => this.native.removeWorker(worker));
  }

  /**
   * For each (worker, dpRank) holding a prefix of the prompt whose local block hashes are
   * `localHashes` (computeBlockHashes), the number of leading blocks it holds; best first
   * (blocks descending, then worker, then dpRank).
   *
   * `earlyExit`: stop walking as soon as at most one candidate remains (Dynamo's early exit).
   * Every count is then exact except the last candidate's, which is a lower bound (the blocks
   * walked so far, at least every other count): enough to pick the best worker, not to know
   * its full overlap.
   */
  findMatches(localHashes: BigUint64Array, opts?: { earlyExit?: boolean }): OverlapMatch[] {
    const r = this.match(localHashes, opts); // may grow this.out: read it after
    return readMatches(this.out, r);
  }

  /**
   * findMatches without an object per match: writes [worker, dpRank, blocks] per match into
   * `out`, best first, as many whole matches as it has room for, and returns the number of
   * matches (when that is more than `out.length / 3`, the rest were left out).
   */
  findMatchesInto(localHashes: BigUint64Array, out: Float64Array, opts?: { earlyExit?: boolean }): number {
    if (!(out instanceof Float64Array)) throw new TypeError(`out must be a Float64Array, got ${describe(out)}`);
    const n = this.match(localHashes, opts) >>> 1;
    copyMatchTriples(this.out, Math.min(n, Math.floor(out.length / 3)), out);
    return n;
  }

  /** Matches into `this.out` (grown when the result needs it): the number of matches times 2,
   * plus 1 when a worker id needs its high int (native/src/bindings/fast.rs). */
  private match(localHashes: BigUint64Array, opts: { earlyExit?: boolean } | undefined): number {
    if (!(localHashes instanceof BigUint64Array) || localHashes.length > MAX_BLOCKS_PER_CALL) expectBlocks(localHashes, 'localHashes');
    let earlyExit = false;
    if (opts !== undefined) {
      const o = expectObject(opts, 'opts');
      if (o.earlyExit !== undefined && typeof o.earlyExit !== 'boolean') {
        throw new TypeError(`opts.earlyExit must be a boolean, got ${describe(o.earlyExit)}`);
      }
      earlyExit = o.earlyExit === true;
    }
    const now = this.matchReadsClock ? this.clock() : 0;
    let r: number;
    try {
      // The common call passes neither time nor option (fewer arguments to read natively).
      if (this.matchReadsClock || earlyExit) r = fast.findMatchesFast(this.handle, localHashes, this.out, now, earlyExit);
      else r = fast.findMatchesFast(this.handle, localHashes, this.out);
    } catch (err) {
      throw translateNativeError(err);
    }
    const n = r >>> 1;
    if (n * MATCH_INTS > this.out.length) {
      this.out = new Int32Array(n * MATCH_INTS * 2);
      this.native.copyMatches(this.out);
    }
    return r;
  }

  /** Approximate mode: (worker, dpRank) was just routed the prompt with these local hashes. */
  recordRouting(worker: number, dpRank: number, localHashes: BigUint64Array): void {
    this.expectMode('approximate', 'recordRouting');
    expectWorkerId(worker);
    expectDpRank(dpRank);
    expectBlocks(localHashes, 'localHashes');
    const now = this.clock();
    callNative(() => this.native.recordRouting(worker, dpRank, localHashes, now));
  }

  /** Approximate mode: drops the entries whose TTL has passed (findMatches also does it first).
   * Returns how many; always 0 in events mode. */
  expire(): number {
    const now = this.clock();
    return callNative(() => this.native.expire(now));
  }

  /** Blocks (worker, dpRank) holds. */
  blocksOf(worker: number, dpRank = 0): number {
    expectWorkerId(worker);
    expectDpRank(dpRank);
    return this.native.blocksOf(worker, dpRank);
  }

  /** The (worker, dpRank) pairs holding at least one block, sorted. */
  workers(): { worker: number; dpRank: number }[] {
    return this.native.workers();
  }

  /** A full, versioned, checksummed dump (blocks, engine hashes, mode and options). */
  snapshot(): Uint8Array {
    return callNative(() => this.native.snapshot());
  }

  /** snapshot() encoded on a libuv thread from a copy taken under the index's lock. */
  snapshotAsync(): Promise<Uint8Array> {
    return this.native.snapshotAsync();
  }

  /** Loads a snapshot() into a new indexer; refuses damaged, truncated or unknown-version bytes. */
  static restore(bytes: Uint8Array, opts?: { clock?: () => number }): KvIndexer {
    if (!(bytes instanceof Uint8Array)) throw new TypeError(`snapshot bytes must be a Uint8Array, got ${describe(bytes)}`);
    const clock = expectClock(expectObject(opts, 'opts').clock);
    let restored: Binding.NativeIndexer;
    try {
      restored = native.NativeIndexer.restore(bytes);
    } catch (err) {
      throw restoreError(err);
    }
    return new KvIndexer(new Restored(restored, clock) as unknown as KvIndexerOptions);
  }

  /** restore() with the decoding and checks on a libuv thread (the bytes are copied first). */
  static async restoreAsync(bytes: Uint8Array, opts?: { clock?: () => number }): Promise<KvIndexer> {
    if (!(bytes instanceof Uint8Array)) throw new TypeError(`snapshot bytes must be a Uint8Array, got ${describe(bytes)}`);
    const clock = expectClock(expectObject(opts, 'opts').clock);
    let restored: Binding.NativeIndexer;
    try {
      restored = await native.NativeIndexer.restoreAsync(bytes);
    } catch (err) {
      throw restoreError(err);
    }
    return new KvIndexer(new Restored(restored, clock) as unknown as KvIndexerOptions);
  }

  stats(): IndexerStats {
    const s = this.native.stats();
    return Object.assign(s, { lowerTierBlocks: perTierObject(s.lowerTierBlocks) });
  }

  private expectMode(mode: IndexerMode, call: string): void {
    if (this.mode !== mode) throw new Error(`${call} needs an indexer in '${mode}' mode, this one is in '${this.mode}' mode`);
  }
}

function expectMode(value: unknown): IndexerMode {
  if (value === undefined) return 'events';
  if (typeof value !== 'string') throw new TypeError(`mode must be a string, got ${describe(value)}`);
  if (!(INDEXER_MODES as readonly string[]).includes(value)) throw new RangeError(`mode must be 'events' or 'approximate', got '${value}'`);
  return value as IndexerMode;
}

function expectBlocks(value: unknown, name: string): BigUint64Array {
  const hashes = expectBigUint64Array(value, name);
  if (hashes.length > MAX_BLOCKS_PER_CALL) {
    throw new RangeError(`${name} holds ${hashes.length} blocks, more than the ${MAX_BLOCKS_PER_CALL} accepted per call`);
  }
  return hashes;
}

/** A refused snapshot, its code kept. */
function restoreError(err: unknown): Error {
  const code = nativeErrorCode(err);
  const e = new Error(`KvIndexer.restore: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  if (code) Object.assign(e, { code });
  return e;
}

function expectPayload(value: unknown): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`payload must be a Uint8Array (a Buffer), got ${describe(value)}`);
  return value;
}

function expectPositive(value: unknown, name: string): number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive finite number, got ${value}`);
  return value;
}

function expectFraction(value: unknown): number {
  if (typeof value !== 'number') throw new TypeError(`pruneFraction must be a number, got ${describe(value)}`);
  if (!(value > 0 && value <= 1)) throw new RangeError(`pruneFraction must be in (0, 1], got ${value}`);
  return value;
}

function expectClock(value: unknown): () => number {
  if (value === undefined) return Date.now;
  if (typeof value !== 'function') throw new TypeError(`clock must be a function returning ms, got ${describe(value)}`);
  return value as () => number;
}
