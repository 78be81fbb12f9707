// The ttft policy's model of a worker's timing (native/src/select/ttft.rs): types, defaults with
// where their figures come from, and the checks done before anything reaches the addon.
import { expectInteger, expectObject } from '../util/validate.js';
import { finite, knownFields, LOWER_TIERS, nonNegative, perTierArray, resolvePerTier, type PerTier } from './tiers.js';

export interface TtftModel {
  /** One prefill step computing N tokens: a N^2 + b N + c ms. */
  prefill: { a: number; b: number; c: number };
  /** One decode pass at KV usage u (fraction of the cache in use): max(minMs, a u^2 + b u + c) ms. */
  decode: { a: number; b: number; c: number; minMs: number };
  /** Tokens a step computes at most (vLLM's max_num_batched_tokens). */
  maxNumBatchedTokens: number;
  /** Milliseconds per token to reload KV from each lower tier. */
  reloadMsPerToken: PerTier;
  /** Milliseconds per token to receive KV from a prefill worker (a disaggregated fleet's decode pool; 0 elsewhere). */
  transferMsPerToken: number;
}

/** Any part of a TtftModel; the rest comes from the model it refines. */
export interface TtftModelInput {
  prefill?: Partial<TtftModel['prefill']>;
  decode?: Partial<TtftModel['decode']>;
  maxNumBatchedTokens?: number;
  reloadMsPerToken?: Partial<PerTier>;
  transferMsPerToken?: number;
}

/** KV bytes per token of a Llama-3-8B-sized model: 32 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes. */
export const KV_BYTES_PER_TOKEN = 131_072;

/**
 * Reload bandwidths behind the default reload times, bytes/s: host memory over PCIe 4.0 x16
 * (about 25 GB/s in practice), a local NVMe SSD (about 5 GB/s of sequential reads), an external
 * pool over a 100 Gb/s RDMA network (12.5 GB/s).
 */
export const RELOAD_BANDWIDTH: PerTier = { host: 25e9, disk: 5e9, external: 12.5e9 };

/**
 * Dynamo's mocker fit (its published defaults, which the simulated engine uses too) and vLLM's
 * default token budget; reload times from RELOAD_BANDWIDTH at KV_BYTES_PER_TOKEN.
 */
export const DEFAULT_TTFT_MODEL: Readonly<TtftModel> = Object.freeze({
  prefill: Object.freeze({ a: 4.209989e-7, b: 1.518344e-2, c: 1.650142e1 }),
  decode: Object.freeze({ a: -25.74, b: 54.01, c: 5.74, minMs: 1 }),
  maxNumBatchedTokens: 8192,
  reloadMsPerToken: Object.freeze({
    host: (KV_BYTES_PER_TOKEN / RELOAD_BANDWIDTH.host) * 1000,
    disk: (KV_BYTES_PER_TOKEN / RELOAD_BANDWIDTH.disk) * 1000,
    external: (KV_BYTES_PER_TOKEN / RELOAD_BANDWIDTH.external) * 1000,
  }),
  transferMsPerToken: 0,
});

/** `input` over `base`, every field checked. */
export function resolveTtftModel(input: unknown, name: string, base: Readonly<TtftModel> = DEFAULT_TTFT_MODEL): TtftModel {
  if (input === undefined) return structuredClone(base) as TtftModel;
  const m = knownFields(expectObject(input, name), name, ['prefill', 'decode', 'maxNumBatchedTokens', 'reloadMsPerToken', 'transferMsPerToken']);
  const p = knownFields(m.prefill, `${name}.prefill`, ['a', 'b', 'c']);
  const d = knownFields(m.decode, `${name}.decode`, ['a', 'b', 'c', 'minMs']);
  const r = knownFields(m.reloadMsPerToken, `${name}.reloadMsPerToken`, LOWER_TIERS);
  return {
    prefill: {
      a: finite(p.a, `${name}.prefill.a`) ?? base.prefill.a,
      b: finite(p.b, `${name}.prefill.b`) ?? base.prefill.b,
      c: finite(p.c, `${name}.prefill.c`) ?? base.prefill.c,
    },
    decode: {
      a: finite(d.a, `${name}.decode.a`) ?? base.decode.a,
      b: finite(d.b, `${name}.decode.b`) ?? base.decode.b,
      c: finite(d.c, `${name}.decode.c`) ?? base.decode.c,
      minMs: nonNegative(d.minMs, `${name}.decode.minMs`) ?? base.decode.minMs,
    },
    maxNumBatchedTokens:
      m.maxNumBatchedTokens === undefined ? base.maxNumBatchedTokens : expectInteger(m.maxNumBatchedTokens, `${name}.maxNumBatchedTokens`, 1, 2 ** 31 - 1),
    reloadMsPerToken: resolvePerTier(r, `${name}.reloadMsPerToken`, base.reloadMsPerToken),
    transferMsPerToken: nonNegative(m.transferMsPerToken, `${name}.transferMsPerToken`) ?? base.transferMsPerToken,
  };
}

/** The addon's form of a model. */
export function nativeTtftModel(m: TtftModel) {
  return {
    prefill: [m.prefill.a, m.prefill.b, m.prefill.c],
    decode: [m.decode.a, m.decode.b, m.decode.c],
    decodeMinMs: m.decode.minMs,
    maxBatchedTokens: m.maxNumBatchedTokens,
    reloadMsPerToken: perTierArray(m.reloadMsPerToken),
    transferMsPerToken: m.transferMsPerToken,
  };
}
