// Lower storage tiers (native/src/tiers): KV blocks the engines report on host memory, disk or an
// external pool (the `medium` of their events), indexed beside the device's, and the kv cost's
// partial credit for a block a worker can reload from one of them instead of computing it.
import { smallInt } from './small-int.js';
import { describe, expectObject } from '../util/validate.js';

/** The lower storage tiers the index keeps, nearest first. */
export const LOWER_TIERS = ['host', 'disk', 'external'] as const;
export type LowerTier = (typeof LOWER_TIERS)[number];
export type PerTier = Record<LowerTier, number>;

/**
 * The kv cost's credit per block a worker can reload from each lower tier: Dynamo's
 * host_cache_hit_weight (0.75) and disk_cache_hit_weight (0.25, which Dynamo applies to external
 * pools too). Host's agrees with the ttft model's figures: reloading a token over PCIe (0.0052 ms)
 * costs a quarter of computing it in a full 8192-token prefill step (0.0207 ms).
 */
export const DEFAULT_TIER_CREDIT: Readonly<PerTier> = Object.freeze({ host: 0.75, disk: 0.25, external: 0.25 });

export function resolveTierCredit(input: unknown, name: string): PerTier {
  if (input === undefined) return { ...DEFAULT_TIER_CREDIT };
  return resolvePerTier(knownFields(input, name, LOWER_TIERS), name, DEFAULT_TIER_CREDIT);
}

/** The addon's form: [host, disk, external]. */
export function perTierArray(v: PerTier): number[] {
  return LOWER_TIERS.map((t) => v[t]);
}

export function perTierObject(v: ArrayLike<number>): PerTier {
  return { host: v[0], disk: v[1], external: v[2] };
}

/** The block counts per tier stored at v[at..at+3], as small integers: perTierObject without a
 * subarray view (a typed-array allocation of its own, nine of them per routing decision). */
export function perTierBlocksAt(v: Float64Array, at: number): PerTier {
  return { host: smallInt(v[at]), disk: smallInt(v[at + 1]), external: smallInt(v[at + 2]) };
}

/** `v`'s tiers over `base`, each a finite number >= 0. */
export function resolvePerTier(v: Record<string, unknown>, name: string, base: Readonly<PerTier>): PerTier {
  return {
    host: nonNegative(v.host, `${name}.host`) ?? base.host,
    disk: nonNegative(v.disk, `${name}.disk`) ?? base.disk,
    external: nonNegative(v.external, `${name}.external`) ?? base.external,
  };
}

/** `v` as an object (undefined: empty) whose fields are all among `keys`. */
export function knownFields(v: unknown, name: string, keys: readonly string[]): Record<string, unknown> {
  if (v === undefined) return {};
  const o = expectObject(v, name);
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) throw new TypeError(`${name} has an unknown field '${k}' (known: ${keys.join(', ')})`);
  }
  return o;
}

export function finite(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new TypeError(`${name} must be a number, got ${describe(v)}`);
  if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number, got ${v}`);
  return v;
}

export function nonNegative(v: unknown, name: string): number | undefined {
  const n = finite(v, name);
  if (n !== undefined && n < 0) throw new RangeError(`${name} must be a finite number >= 0, got ${n}`);
  return n;
}
