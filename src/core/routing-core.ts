// RoutingCore: load booking and worker selection for one worker pool, over the native core.
// route() is ONE native call (hash + match + select + book), through the addon's hand-written
// entry (fast-calls.ts) when the request has no seed and no options; the decision comes back
// through a reused Float64Array (decision-buffer.ts reads it) so that nothing but the result
// objects is allocated per call.
import { native, type Binding } from './binding.js';
import { callNative, translateNativeError } from './errors.js';
import { BOOKING_FREE, BOOKING_MARK_PREFILL_COMPLETED, fast } from './fast-calls.js';
import { blockHashSeed, encodeMultimodal, type HashOptions } from './hashing.js';
import type { KvIndexer } from './indexer.js';
import { readDecision, type RoutingDecision } from './decision-buffer.js';
import { DECISION_LEN } from './generated/layout.js';
import { perTierArray, perTierObject } from './tiers.js';
import { nativeTtftModel } from './ttft-model.js';
import { checkRouteRequest, resolveRoutingConfig, toNativeSpec, type ResolvedRoutingConfig, type RoutingConfig, type WorkerSpec } from './routing-config.js';
import { translateRoutingError } from './routing-errors.js';
import { describe, expectDpRank, expectInteger, expectObject, expectUint8Array, expectWorkerId } from '../util/validate.js';

export { POLICY_NAMES, type PolicyName, type RoutingConfig, type WorkerSpec } from './routing-config.js';
export type { CandidateCost, RoutingDecision } from './decision-buffer.js';

export interface RouteRequest {
  requestId: string;
  loraName?: string;
  cacheNamespace?: string;
  mmHashes?: HashOptions['mmHashes'];
  /** Only these workers may be chosen. */
  allowedWorkers?: readonly number[];
  pinnedWorker?: number;
  pinnedDpRank?: number;
  /** Expected output length: the request's blocks weigh less as its output approaches it. */
  expectedOutputTokens?: number;
  /**
   * The request's priority class when its engine schedules by priority (the router forwards it):
   * booked under that class, and the ttft policy counts only the queued work of its class or
   * higher, which the engine serves first. Undefined: the engine serves first come, first served.
   */
  enginePriority?: number;
  overlapScoreCredit?: number;
  prefillLoadScale?: number;
  temperature?: number;
}

export type QueryRequest = Omit<RouteRequest, 'requestId'> & { requestId?: string };

export interface WorkerLoad {
  worker: number;
  dpRank: number;
  prefillTokens: number;
  /** Decode blocks with decay (a finishing request's own blocks weigh less). */
  decodeBlocks: number;
  /** Distinct blocks held, without decay. */
  activeBlocks: number;
  requests: number;
}

export interface RoutingTotals {
  prefillTokens: number;
  decodeBlocks: number;
  requests: number;
}

export interface RoutingStats {
  booked: number;
  freed: number;
  expired: number;
  active: number;
}

/** A booking another router replica made, as it announced it (src/server/replicas). */
export interface RemoteBooking {
  /** The request id on its replica (unique per replica, not against this router's). */
  requestId: string;
  worker: number;
  dpRank: number;
  promptTokens: number;
  overlapBlocks: number;
  expectedOutputTokens?: number;
  /** The prompt's local block hashes, little-endian u64 bytes (`lastLocalHashes()` on its replica). */
  hashes: Uint8Array;
}

export interface RemoteBookingStats {
  booked: number;
  freed: number;
  expired: number;
  /** Released at once because their replica went silent or re-announced its bookings. */
  dropped: number;
  active: number;
  /** Bookings held here per other replica. */
  replicas: Array<{ replica: string; requests: number }>;
}

const MAX_OUTPUT_TOKENS = 2 ** 32 - 1;

export class RoutingCore {
  readonly indexer: KvIndexer;
  readonly config: Readonly<ResolvedRoutingConfig>;
  private readonly core: Binding.NativeRoutingCore;
  /** The core's handle for the addon's fast calls. */
  private readonly handle: number;
  private readonly clock: () => number;
  private readonly out = new Float64Array(DECISION_LEN);

  constructor(indexer: KvIndexer, config: RoutingConfig) {
    this.config = Object.freeze(resolveRoutingConfig(indexer, config));
    this.indexer = indexer;
    this.clock = this.config.clock;
    const c = this.config;
    this.core = callNative(
      () =>
        new native.NativeRoutingCore(indexer.native, {
          blockSize: c.blockSize,
          policy: c.policy,
          overlapScoreCredit: c.overlapScoreCredit,
          prefillLoadScale: c.prefillLoadScale,
          temperature: c.temperature,
          busyDecodeFraction: c.busyDecodeFraction,
          busyPrefillTokens: c.busyPrefillTokens,
          maxQueuedPrefillTokens: c.maxQueuedPrefillTokens,
          staleBookingMs: c.staleBookingMs,
          seed: c.seed,
          approximate: c.approximate,
          tierCredit: perTierArray(c.tierCredit),
          ttft: nativeTtftModel(c.ttft),
        }),
    );
    this.handle = this.core.handle;
  }

  /** Replaces the pool's workers (bookings on removed workers stay until freed). */
  setWorkers(specs: readonly WorkerSpec[]): void {
    if (!Array.isArray(specs)) throw new TypeError(`specs must be an array, got ${describe(specs)}`);
    const converted = specs.map((s, i) => toNativeSpec(s, `specs[${i}]`, this.config.ttft));
    this.native(() => this.core.setWorkers(converted));
  }

  /** Adds a worker, or updates its dpSize and capacity when it is already in the pool. */
  addWorker(spec: WorkerSpec): void {
    const converted = toNativeSpec(spec, 'spec', this.config.ttft);
    this.native(() => this.core.upsertWorker(converted));
  }

  /** Takes a worker out of selection; its bookings stay until freed. False when unknown. */
  removeWorker(worker: number): boolean {
    return this.core.removeWorker(expectWorkerId(worker));
  }

  workers(): WorkerSpec[] {
    return this.core.workers().map((s) => {
      const spec: WorkerSpec = { worker: s.worker, dpSize: s.dpSize };
      if (s.kvCapacityBlocks !== undefined && s.kvCapacityBlocks !== null) spec.kvCapacityBlocks = s.kvCapacityBlocks;
      if (s.ttft) {
        const [pa, pb, pc] = s.ttft.prefill;
        const [da, db, dc] = s.ttft.decode;
        spec.ttft = {
          prefill: { a: pa, b: pb, c: pc },
          decode: { a: da, b: db, c: dc, minMs: s.ttft.decodeMinMs },
          maxNumBatchedTokens: s.ttft.maxBatchedTokens,
          reloadMsPerToken: perTierObject(s.ttft.reloadMsPerToken),
          transferMsPerToken: s.ttft.transferMsPerToken,
        };
      }
      return spec;
    });
  }

  /** Hash + match + select + book, in one native call. Throws a RoutingError when refused. */
  route(tokens: Uint32Array, req: RouteRequest): RoutingDecision {
    return this.decide(tokens, req, true);
  }

  /** The decision route() would make now: books nothing, records nothing, advances nothing. */
  query(tokens: Uint32Array, req: QueryRequest = {}): RoutingDecision {
    return this.decide(tokens, req, false);
  }

  /** The request's first token arrived: its prefill tokens leave the queue. True the first time. */
  markPrefillCompleted(requestId: string): boolean {
    // Through the hand-written entry: no napi-derive glue, no String for the id (fast-calls.ts).
    return fast.bookingFast(this.handle, expectId(requestId), this.now(), BOOKING_MARK_PREFILL_COMPLETED) === 1;
  }

  /** Output-block growth: `tokens` more generated tokens (implies prefill completed). */
  addOutputTokens(requestId: string, tokens: number): boolean {
    const id = expectId(requestId);
    const n = expectInteger(tokens, 'tokens', 0, MAX_OUTPUT_TOKENS);
    return this.core.addOutputTokens(id, n, this.now());
  }

  /** Releases the request's booking. Idempotent: false when unknown or already freed. */
  free(requestId: string): boolean {
    return fast.bookingFast(this.handle, expectId(requestId), this.now(), BOOKING_FREE) === 1;
  }

  /** Frees bookings untouched for staleBookingMs; returns how many. */
  expireStale(): number {
    return this.core.expireStale(this.now());
  }

  load(): WorkerLoad[] {
    return this.core.load();
  }

  totals(): RoutingTotals {
    return this.core.totals();
  }

  stats(): RoutingStats {
    return this.core.stats();
  }

  // ---- bookings of other router replicas (src/server/replicas shares them) ----------------

  /** The local block hashes of the last route() or query(), as little-endian u64 bytes: what a replica announces of a booking. */
  lastLocalHashes(): Uint8Array {
    return this.core.lastLocalHashes();
  }

  /**
   * Books what router replica `replica` booked, on the same worker and rank, under its id (in
   * approximate mode its decision is recorded in the index too). False when that replica already
   * has the request booked here.
   */
  applyRemoteBooking(replica: string, booking: RemoteBooking): boolean {
    const origin = expectReplica(replica);
    const b = expectObject(booking, 'booking');
    const id = expectId(b.requestId);
    const worker = expectWorkerId(b.worker, 'booking.worker');
    const dpRank = expectDpRank(b.dpRank, 'booking.dpRank');
    const hashes = expectUint8Array(b.hashes, 'booking.hashes');
    if (hashes.length % 8 !== 0) throw new RangeError(`booking.hashes must hold whole 8-byte hashes, got ${hashes.length} bytes`);
    const prompt = expectInteger(b.promptTokens, 'booking.promptTokens', 0, Number.MAX_SAFE_INTEGER);
    const overlap = expectInteger(b.overlapBlocks, 'booking.overlapBlocks', 0, 2 ** 32 - 1);
    const expected =
      b.expectedOutputTokens === undefined ? undefined : expectInteger(b.expectedOutputTokens, 'booking.expectedOutputTokens', 0, MAX_OUTPUT_TOKENS);
    return this.native(() => this.core.applyRemoteBooking(origin, id, worker, dpRank, hashes, prompt, overlap, expected, this.now()));
  }

  /** The first token of another replica's request. True the first time. */
  markRemotePrefillCompleted(replica: string, requestId: string): boolean {
    return this.core.markRemotePrefillCompleted(expectReplica(replica), expectId(requestId), this.now());
  }

  /** Releases another replica's booking. False when unknown or already freed. */
  freeRemote(replica: string, requestId: string): boolean {
    return this.core.freeRemote(expectReplica(replica), expectId(requestId), this.now());
  }

  /** Releases every booking of `replica` (it went silent); returns how many. */
  dropReplica(replica: string): number {
    return this.core.dropReplica(expectReplica(replica), this.now());
  }

  remoteStats(): RemoteBookingStats {
    return this.core.remoteStats();
  }

  private decide(tokens: Uint32Array, req: QueryRequest, book: boolean): RoutingDecision {
    const r = checkRouteRequest(tokens, req, book);
    const seed = r.loraName || r.cacheNamespace ? blockHashSeed(r.loraName, r.cacheNamespace) : null;
    const extra = r.extra ? nativeOptions(req) : null;
    const now = this.now();
    const out = this.out;
    const id = r.requestId ?? '';
    let n: number;
    if (seed === null && extra === null) {
      try {
        n = fast.routeFast(this.handle, tokens, id, now, out, book);
      } catch (err) {
        throw translateRoutingError(translateNativeError(err), () => this.core.lastRetryAfterMs);
      }
    } else {
      n = this.native(() => (book ? this.core.route(tokens, id, now, out, seed, extra) : this.core.query(tokens, id, now, out, seed, extra)));
    }
    return readDecision(out, n, id, this.config.policy);
  }

  private now(): number {
    const t = this.clock();
    if (typeof t !== 'number' || Number.isNaN(t)) throw new TypeError(`clock() must return a number, got ${describe(t)}`);
    return t;
  }

  /** Runs an addon call, mapping its refusals to RoutingErrors and range failures to RangeError. */
  private native<T>(fn: () => T): T {
    try {
      return callNative(fn);
    } catch (err) {
      throw translateRoutingError(err, () => this.core.lastRetryAfterMs);
    }
  }
}

/** The addon's optional per-request fields (already validated by checkRouteRequest). */
function nativeOptions(req: QueryRequest): Binding.NativeRouteOptions {
  const mm = encodeMultimodal(req.mmHashes);
  return {
    mmOffsets: mm?.offsets,
    mmHashes: mm?.hashes,
    allowedWorkers: req.allowedWorkers ? Float64Array.from(req.allowedWorkers) : undefined,
    pinnedWorker: req.pinnedWorker,
    pinnedDpRank: req.pinnedDpRank,
    expectedOutputTokens: req.expectedOutputTokens,
    enginePriority: req.enginePriority,
    overlapScoreCredit: req.overlapScoreCredit,
    prefillLoadScale: req.prefillLoadScale,
    temperature: req.temperature,
  };
}

function expectId(requestId: unknown): string {
  if (typeof requestId !== 'string') throw new TypeError(`requestId must be a string, got ${describe(requestId)}`);
  return requestId;
}

function expectReplica(replica: unknown): string {
  if (typeof replica !== 'string') throw new TypeError(`replica must be a string, got ${describe(replica)}`);
  if (replica === '') throw new RangeError('replica must be a non-empty string');
  return replica;
}
