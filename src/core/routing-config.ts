// RoutingCore's configuration, worker specs and per-request fields: types, defaults and the
// argument checks done before anything reaches the addon.
import { KvIndexer } from './indexer.js';
import { resolveTierCredit, type PerTier } from './tiers.js';
import { nativeTtftModel, resolveTtftModel, type TtftModel, type TtftModelInput } from './ttft-model.js';
import { POLICY_NAMES, type PolicyName } from './vocabulary.js';
import {
  describe,
  expectBlockSize,
  expectDpRank,
  expectInteger,
  expectObject,
  expectOptionalString,
  expectUint32Array,
  expectWorkerId,
} from '../util/validate.js';

export { POLICY_NAMES, type PolicyName };

export interface RoutingConfig {
  blockSize: number;
  /** Default 'kv'. */
  policy?: PolicyName;
  /** Default 1: each cached block credits one block of prefill. */
  overlapScoreCredit?: number;
  /** Default 1. */
  prefillLoadScale?: number;
  /** Default 0: lowest cost, exact ties at random. */
  temperature?: number;
  /** Exclude a worker whose decode blocks >= fraction x kvCapacityBlocks. */
  busyDecodeFraction?: number;
  /** Exclude a worker whose booked prefill tokens >= this. */
  busyPrefillTokens?: number;
  /** Backpressure: refuse when all booked prefill tokens + this request's exceed it. */
  maxQueuedPrefillTokens?: number;
  /** Bookings untouched this long expire. Default 600 000 (Infinity: never). */
  staleBookingMs?: number;
  /** Seed of tie-breaking and sampling (default: random; the resolved config shows it). */
  seed?: number;
  /** Time source in ms. Default Date.now; the offline simulator passes a virtual clock. */
  clock?: () => number;
  /** Record each booked decision into the indexer (which must be in 'approximate' mode). */
  approximate?: boolean;
  /** kv's credit per block a worker can reload from a lower tier (default host 0.75, disk 0.25, external 0.25). */
  tierCredit?: Partial<PerTier>;
  /** The ttft policy's model of the pool's workers (default: Dynamo's mocker fit; see ttft-model.ts). */
  ttft?: TtftModelInput;
}

export interface ResolvedRoutingConfig extends Omit<RoutingConfig, 'tierCredit' | 'ttft'> {
  policy: PolicyName;
  overlapScoreCredit: number;
  prefillLoadScale: number;
  temperature: number;
  staleBookingMs: number;
  seed: number;
  clock: () => number;
  approximate: boolean;
  tierCredit: PerTier;
  ttft: TtftModel;
}

export interface WorkerSpec {
  worker: number;
  /** Data-parallel ranks 0..dpSize-1 are candidates. Default 1. */
  dpSize?: number;
  /** KV cache size in blocks, for busyDecodeFraction and the ttft policy's KV usage. */
  kvCapacityBlocks?: number;
  /** This worker's timing for the ttft policy, over the pool's (a faster GPU, a longer token budget). */
  ttft?: TtftModelInput;
}

const MAX_DP_SIZE = 65_536;
const MAX_REQUEST_ID_LENGTH = 1024;
const MAX_OUTPUT_TOKENS = 2 ** 32 - 1;

export function resolveRoutingConfig(indexer: unknown, config: RoutingConfig): ResolvedRoutingConfig {
  if (!(indexer instanceof KvIndexer)) throw new TypeError(`indexer must be a KvIndexer, got ${describe(indexer)}`);
  if (config === undefined || config === null) throw new TypeError('config is required (at least { blockSize })');
  const c = expectObject(config, 'config');
  const blockSize = expectBlockSize(c.blockSize);
  if (blockSize !== indexer.blockSize) {
    throw new RangeError(`config.blockSize ${blockSize} differs from the indexer's block size ${indexer.blockSize}`);
  }
  const approximate = optionalBoolean(c.approximate, 'config.approximate') ?? false;
  if (approximate && indexer.mode !== 'approximate') {
    throw new RangeError("config.approximate needs a KvIndexer in 'approximate' mode");
  }
  const clock = c.clock ?? Date.now;
  if (typeof clock !== 'function') throw new TypeError(`config.clock must be a function, got ${describe(clock)}`);
  return {
    blockSize,
    policy: expectPolicy(c.policy ?? 'kv'),
    overlapScoreCredit: nonNegative(c.overlapScoreCredit, 'config.overlapScoreCredit') ?? 1,
    prefillLoadScale: nonNegative(c.prefillLoadScale, 'config.prefillLoadScale') ?? 1,
    temperature: nonNegative(c.temperature, 'config.temperature') ?? 0,
    busyDecodeFraction: positive(c.busyDecodeFraction, 'config.busyDecodeFraction'),
    busyPrefillTokens: optionalCount(c.busyPrefillTokens, 'config.busyPrefillTokens'),
    maxQueuedPrefillTokens: optionalCount(c.maxQueuedPrefillTokens, 'config.maxQueuedPrefillTokens'),
    staleBookingMs: positive(c.staleBookingMs, 'config.staleBookingMs', true) ?? 600_000,
    seed: c.seed === undefined ? Math.floor(Math.random() * 2 ** 32) : expectInteger(c.seed, 'config.seed', 0, Number.MAX_SAFE_INTEGER),
    clock: clock as () => number,
    approximate,
    tierCredit: resolveTierCredit(c.tierCredit, 'config.tierCredit'),
    ttft: resolveTtftModel(c.ttft, 'config.ttft'),
  };
}

export interface NativeSpec {
  worker: number;
  dpSize: number;
  kvCapacityBlocks?: number;
  ttft?: ReturnType<typeof nativeTtftModel>;
}

/** A worker spec, checked, in the addon's form (its ttft model over the pool's `model`). */
export function toNativeSpec(spec: unknown, name: string, model: Readonly<TtftModel>): NativeSpec {
  if (spec === undefined || spec === null) throw new TypeError(`${name} must be a worker spec object, got ${describe(spec)}`);
  const s = expectObject(spec, name);
  const out: NativeSpec = {
    worker: expectWorkerId(s.worker, `${name}.worker`),
    dpSize: s.dpSize === undefined ? 1 : expectInteger(s.dpSize, `${name}.dpSize`, 1, MAX_DP_SIZE),
  };
  if (s.kvCapacityBlocks !== undefined) out.kvCapacityBlocks = expectInteger(s.kvCapacityBlocks, `${name}.kvCapacityBlocks`, 1, Number.MAX_SAFE_INTEGER);
  if (s.ttft !== undefined) out.ttft = nativeTtftModel(resolveTtftModel(s.ttft, `${name}.ttft`, model));
  return out;
}

export interface CheckedRoute {
  requestId: string | undefined;
  loraName: string | undefined;
  cacheNamespace: string | undefined;
  /** Whether any field beyond id, LoRA and namespace is set (the addon's options object). */
  extra: boolean;
}

/** Checks a route or query request; `book` requires a request id. */
export function checkRouteRequest(tokens: unknown, req: unknown, book: boolean): CheckedRoute {
  expectUint32Array(tokens, 'tokens');
  if (book && (req === undefined || req === null)) throw new TypeError('req is required (at least { requestId })');
  const r = expectObject(req, 'req');
  let requestId: string | undefined;
  if (book || (r.requestId !== undefined && r.requestId !== null)) {
    if (typeof r.requestId !== 'string') throw new TypeError(`req.requestId must be a string, got ${describe(r.requestId)}`);
    if ((book && r.requestId.length === 0) || r.requestId.length > MAX_REQUEST_ID_LENGTH) {
      throw new RangeError(`req.requestId must have 1..${MAX_REQUEST_ID_LENGTH} characters, got ${r.requestId.length}`);
    }
    requestId = r.requestId;
  }
  let extra = false;
  if (r.mmHashes !== undefined && r.mmHashes !== null) extra = true; // checked when encoded
  if (r.allowedWorkers !== undefined && r.allowedWorkers !== null) {
    if (!Array.isArray(r.allowedWorkers)) throw new TypeError(`req.allowedWorkers must be an array of worker ids, got ${describe(r.allowedWorkers)}`);
    r.allowedWorkers.forEach((w: unknown, i: number) => expectWorkerId(w, `req.allowedWorkers[${i}]`));
    extra = true;
  }
  if (present(r.pinnedWorker)) {
    expectWorkerId(r.pinnedWorker, 'req.pinnedWorker');
    extra = true;
  }
  if (present(r.pinnedDpRank)) {
    expectDpRank(r.pinnedDpRank, 'req.pinnedDpRank');
    extra = true;
  }
  if (present(r.expectedOutputTokens)) {
    expectInteger(r.expectedOutputTokens, 'req.expectedOutputTokens', 0, MAX_OUTPUT_TOKENS);
    extra = true;
  }
  if (present(r.enginePriority)) {
    expectInteger(r.enginePriority, 'req.enginePriority', -(2 ** 31), 2 ** 31 - 1);
    extra = true;
  }
  for (const k of ['overlapScoreCredit', 'prefillLoadScale', 'temperature'] as const) {
    if (present(r[k])) {
      nonNegative(r[k], `req.${k}`);
      extra = true;
    }
  }
  return {
    requestId,
    loraName: expectOptionalString(r.loraName, 'req.loraName'),
    cacheNamespace: expectOptionalString(r.cacheNamespace, 'req.cacheNamespace'),
    extra,
  };
}

function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function expectPolicy(v: unknown): PolicyName {
  if (typeof v !== 'string') throw new TypeError(`config.policy must be a string, got ${describe(v)}`);
  if (!(POLICY_NAMES as readonly string[]).includes(v)) {
    throw new RangeError(`config.policy must be one of ${POLICY_NAMES.join(', ')}, got '${v}'`);
  }
  return v as PolicyName;
}

function nonNegative(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`${name} must be a number, got ${describe(v)}`);
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} must be a finite number >= 0, got ${v}`);
  return v;
}

function positive(v: unknown, name: string, allowInfinity = false): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`${name} must be a number, got ${describe(v)}`);
  if (Number.isNaN(v) || v <= 0 || (!allowInfinity && !Number.isFinite(v))) {
    throw new RangeError(`${name} must be a ${allowInfinity ? '' : 'finite '}number > 0, got ${v}`);
  }
  return v;
}

function optionalCount(v: unknown, name: string): number | undefined {
  return v === undefined ? undefined : expectInteger(v, name, 1, Number.MAX_SAFE_INTEGER);
}

function optionalBoolean(v: unknown, name: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${describe(v)}`);
  return v;
}
