// Engine model configuration: defaults (those of Dynamo's mocker for timing, vLLM's for the
// scheduler) and validation. A bad option is a TypeError/RangeError at construction, never later.
import { describe, expectBlockSize, expectInteger, expectOptionalBoolean } from '../../util/validate.js';

export interface PrefillTiming {
  a: number;
  b: number;
  c: number;
}

export interface DecodeTiming {
  a: number;
  b: number;
  c: number;
  minMs: number;
}

/** prefill ms = a N^2 + b N + c (N tokens computed); decode ms = max(minMs, a u^2 + b u + c) (u = KV usage). */
export interface EngineTiming {
  prefill: PrefillTiming;
  decode: DecodeTiming;
}

/** EngineTiming, or any part of it (the rest from the defaults). */
export interface EngineTimingInput {
  prefill?: Partial<PrefillTiming>;
  decode?: Partial<DecodeTiming>;
}

export interface KvTransferConfig {
  bytesPerToken: number;
  bandwidthBytesPerS: number;
}

export interface EngineConfig {
  blockSize?: number;
  kvBlocks?: number;
  maxNumBatchedTokens?: number;
  maxNumSeqs?: number;
  timing?: EngineTimingInput;
  /** Divides every modelled duration (step times and KV transfers). */
  speedup?: number;
  seed?: number;
  kvTransfer?: KvTransferConfig;
  /** Probability that a generated token ends the request (finish reason 'stop'); 0 = only length stops. */
  eosProbability?: number;
  /** A held prefill (holdBlocksAfterFinish) frees its blocks after this long without release(). */
  prefillHoldMs?: number;
  /**
   * Blocks of the CPU offload tier (0: none). GPU blocks the LRU evicts move there (KV events with
   * medium CPU), and a prefix found there is reloaded instead of recomputed.
   */
  offloadBlocks?: number;
  /** Host-to-GPU bandwidth of a reload from the CPU tier (bytes of KV per token: kvTransfer.bytesPerToken). */
  offloadBandwidthBytesPerS?: number;
  /**
   * Whether steps report KV events (default true). false: every step's `events` is empty and none
   * is built, for a driver that ignores them (a replayed policy that never reads the index).
   */
  kvEvents?: boolean;
  /**
   * How the waiting queue is ordered (vLLM's --scheduling-policy): 'fcfs' (default) in arrival
   * order; 'priority' by each request's `priority` (lower first, vLLM's convention), then arrival,
   * and a preemption takes the lowest-priority running request. Under fcfs a request with a
   * non-zero priority is refused, as vLLM refuses it.
   */
  schedulingPolicy?: SchedulingPolicy;
}

export const SCHEDULING_POLICIES = ['fcfs', 'priority'] as const;
export type SchedulingPolicy = (typeof SCHEDULING_POLICIES)[number];

export interface ResolvedEngineConfig {
  readonly blockSize: number;
  readonly kvBlocks: number;
  readonly maxNumBatchedTokens: number;
  readonly maxNumSeqs: number;
  readonly timing: Readonly<{ prefill: Readonly<PrefillTiming>; decode: Readonly<DecodeTiming> }>;
  readonly speedup: number;
  readonly seed: number;
  readonly kvTransfer: Readonly<KvTransferConfig>;
  readonly eosProbability: number;
  readonly prefillHoldMs: number;
  readonly offloadBlocks: number;
  readonly offloadBandwidthBytesPerS: number;
  readonly kvEvents: boolean;
  readonly schedulingPolicy: SchedulingPolicy;
}

/** Dynamo mocker's published fit (milliseconds). */
export const DEFAULT_TIMING: EngineTiming = Object.freeze({
  prefill: Object.freeze({ a: 4.209989e-7, b: 1.518344e-2, c: 1.650142e1 }),
  decode: Object.freeze({ a: -25.74, b: 54.01, c: 5.74, minMs: 1 }),
});

/** A Llama-3-8B-sized KV (32 layers x 8 KV heads x 128 dims x K,V x fp16 = 128 KiB/token) over 200 Gb/s. */
export const DEFAULT_KV_TRANSFER: KvTransferConfig = Object.freeze({ bytesPerToken: 131_072, bandwidthBytesPerS: 25e9 });

/**
 * A reload from the CPU tier: host memory to GPU over PCIe 4.0 x16, about 25 GB/s in practice (the
 * router's ttft model assumes the same for its host tier). At 128 KiB of KV per token, a 16-token
 * block takes 0.084 ms, a quarter of what computing it costs in a full 8192-token prefill step.
 */
export const DEFAULT_OFFLOAD_BANDWIDTH_BYTES_PER_S = 25e9;

const KNOWN_KEYS = new Set([
  'blockSize',
  'kvBlocks',
  'maxNumBatchedTokens',
  'maxNumSeqs',
  'timing',
  'speedup',
  'seed',
  'kvTransfer',
  'eosProbability',
  'prefillHoldMs',
  'offloadBlocks',
  'offloadBandwidthBytesPerS',
  'kvEvents',
  'schedulingPolicy',
]);

export function resolveEngineConfig(input: unknown): ResolvedEngineConfig {
  const cfg = plainObject(input, 'engine config');
  for (const key of Object.keys(cfg)) {
    if (!KNOWN_KEYS.has(key)) throw new TypeError(`unknown engine config option '${key}'`);
  }
  const pick = <T>(key: string, fallback: T): unknown => (cfg[key] === undefined ? fallback : cfg[key]);
  return Object.freeze({
    blockSize: expectBlockSize(pick('blockSize', 16)),
    kvBlocks: expectInteger(pick('kvBlocks', 16_384), 'kvBlocks', 1, 1 << 26),
    maxNumBatchedTokens: expectInteger(pick('maxNumBatchedTokens', 8192), 'maxNumBatchedTokens', 1, 2 ** 31 - 1),
    maxNumSeqs: expectInteger(pick('maxNumSeqs', 256), 'maxNumSeqs', 1, 1 << 20),
    timing: resolveTiming(cfg.timing),
    speedup: expectNumber(pick('speedup', 1), 'speedup', { min: 0, minExclusive: true }),
    seed: expectInteger(pick('seed', 0), 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    kvTransfer: resolveTransfer(cfg.kvTransfer),
    eosProbability: expectNumber(pick('eosProbability', 0), 'eosProbability', { min: 0, max: 1 }),
    prefillHoldMs: expectNumber(pick('prefillHoldMs', 120_000), 'prefillHoldMs', { min: 0, allowInfinity: true }),
    offloadBlocks: expectInteger(pick('offloadBlocks', 0), 'offloadBlocks', 0, 1 << 28),
    offloadBandwidthBytesPerS: expectNumber(pick('offloadBandwidthBytesPerS', DEFAULT_OFFLOAD_BANDWIDTH_BYTES_PER_S), 'offloadBandwidthBytesPerS', {
      min: 0,
      minExclusive: true,
      allowInfinity: true,
    }),
    kvEvents: cfg.kvEvents === undefined ? true : expectOptionalBoolean(cfg.kvEvents, 'kvEvents'),
    schedulingPolicy: schedulingPolicyOf(cfg.schedulingPolicy),
  });
}

function schedulingPolicyOf(value: unknown): SchedulingPolicy {
  if (value === undefined) return 'fcfs';
  if (!(SCHEDULING_POLICIES as readonly unknown[]).includes(value))
    throw new RangeError(`schedulingPolicy must be 'fcfs' or 'priority', got ${describe(value)}`);
  return value as SchedulingPolicy;
}

function resolveTiming(input: unknown): ResolvedEngineConfig['timing'] {
  const t = plainObject(input, 'timing');
  const p = plainObject(t.prefill, 'timing.prefill');
  const d = plainObject(t.decode, 'timing.decode');
  const coef = (obj: Record<string, unknown>, key: string, fallback: number, name: string) =>
    expectNumber(obj[key] === undefined ? fallback : obj[key], name, {});
  const dp = DEFAULT_TIMING.prefill;
  const dd = DEFAULT_TIMING.decode;
  return Object.freeze({
    prefill: Object.freeze({
      a: coef(p, 'a', dp.a, 'timing.prefill.a'),
      b: coef(p, 'b', dp.b, 'timing.prefill.b'),
      c: coef(p, 'c', dp.c, 'timing.prefill.c'),
    }),
    decode: Object.freeze({
      a: coef(d, 'a', dd.a, 'timing.decode.a'),
      b: coef(d, 'b', dd.b, 'timing.decode.b'),
      c: coef(d, 'c', dd.c, 'timing.decode.c'),
      minMs: expectNumber(d.minMs === undefined ? dd.minMs : d.minMs, 'timing.decode.minMs', { min: 0 }),
    }),
  });
}

function resolveTransfer(input: unknown): Readonly<KvTransferConfig> {
  const t = plainObject(input, 'kvTransfer');
  return Object.freeze({
    bytesPerToken: expectNumber(t.bytesPerToken ?? DEFAULT_KV_TRANSFER.bytesPerToken, 'kvTransfer.bytesPerToken', { min: 0 }),
    bandwidthBytesPerS: expectNumber(t.bandwidthBytesPerS ?? DEFAULT_KV_TRANSFER.bandwidthBytesPerS, 'kvTransfer.bandwidthBytesPerS', {
      min: 0,
      minExclusive: true,
      allowInfinity: true,
    }),
  });
}

interface NumberBounds {
  min?: number;
  max?: number;
  minExclusive?: boolean;
  allowInfinity?: boolean;
}

export function expectNumber(value: unknown, name: string, bounds: NumberBounds): number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  const finiteOk = Number.isFinite(value) || (bounds.allowInfinity === true && value === Infinity);
  const { min, max } = bounds;
  const belowMin = min !== undefined && (bounds.minExclusive ? value <= min : value < min);
  if (!finiteOk || belowMin || (max !== undefined && value > max)) {
    const lo = min === undefined ? '(-inf' : `${bounds.minExclusive ? '(' : '['}${min}`;
    const hi = max === undefined ? (bounds.allowInfinity ? 'inf]' : 'inf)') : `${max}]`;
    throw new RangeError(`${name} must be a number in ${lo}, ${hi}, got ${value}`);
  }
  return value;
}

function plainObject(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) {
    throw new TypeError(`${name} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}
