// Dynamo-compatible block and sequence hashing (PROTOCOLS.md section 1), computed natively.
import { native } from './binding.js';
import { callNative } from './errors.js';
import { allocU64 } from './result-slab.js';
import {
  describe,
  expectBigUint64Array,
  expectBlockSize,
  expectObject,
  expectOptionalBoolean,
  expectOptionalString,
  expectUint32Array,
} from '../util/validate.js';

/** A multimodal content identifier: a u64 hash, or a string (64-hex digest or any other id). */
export type MultimodalId = bigint | string;

export interface HashOptions {
  /** LoRA adapter name: isolates the adapter's cache through the hash seed. */
  loraName?: string;
  /** Cache namespace (tenant isolation), also through the seed. */
  cacheNamespace?: string;
  /** mmHashes[i]: the multimodal items inside block i (absent or empty: none). */
  mmHashes?: ReadonlyArray<ReadonlyArray<MultimodalId> | null | undefined>;
  /**
   * EAGLE engines (Dynamo's `is_eagle`): each block hashes its tokens and the first token of the
   * next block (windows of blockSize + 1 tokens, stride blockSize), so n tokens give
   * floor((n - 1) / blockSize) blocks.
   */
  eagle?: boolean;
}

const seedCache = new Map<string, bigint>();
const DEFAULT_SEED = 1337n;

/** Seed of the local hash for a LoRA name and cache namespace (cached: a handful exist). */
export function blockHashSeed(loraName?: string, cacheNamespace?: string): bigint {
  if (!loraName && !cacheNamespace) return DEFAULT_SEED;
  const key = `${loraName ?? ''}\u0000${cacheNamespace ?? ''}`;
  let seed = seedCache.get(key);
  if (seed === undefined) {
    seed = native.blockHashSeed(loraName || null, cacheNamespace || null);
    if (seedCache.size < 4096) seedCache.set(key, seed);
  }
  return seed;
}

/** The u64 a multimodal identifier contributes to its block's hash. */
export function multimodalIdHash(id: MultimodalId): bigint {
  if (typeof id === 'bigint') {
    if (id < 0n || id >= 1n << 64n) throw new RangeError(`multimodal hash must fit in 64 unsigned bits, got ${id}`);
    return id;
  }
  if (typeof id !== 'string') throw new TypeError(`multimodal id must be a bigint or a string, got ${describe(id)}`);
  return native.mmIdentifierHash(id);
}

/** Flattens per-block multimodal ids into the CSR pair the addon reads. */
export function encodeMultimodal(mmHashes: unknown): { offsets: Uint32Array; hashes: BigUint64Array } | undefined {
  if (mmHashes === undefined || mmHashes === null) return undefined;
  if (!Array.isArray(mmHashes)) throw new TypeError(`mmHashes must be an array (one entry per block), got ${describe(mmHashes)}`);
  const offsets = new Uint32Array(mmHashes.length + 1);
  const flat: bigint[] = [];
  mmHashes.forEach((ids: unknown, block) => {
    if (ids !== undefined && ids !== null) {
      if (!Array.isArray(ids)) throw new TypeError(`mmHashes[${block}] must be an array of ids, got ${describe(ids)}`);
      for (const id of ids) flat.push(multimodalIdHash(id as MultimodalId));
    }
    offsets[block + 1] = flat.length;
  });
  return { offsets, hashes: BigUint64Array.from(flat) };
}

/** Complete blocks in `tokens` tokens (EAGLE windows need one token past the block). */
export function blockCount(tokens: number, blockSize: number, eagle = false): number {
  return eagle ? Math.floor(Math.max(0, tokens - 1) / blockSize) : Math.floor(tokens / blockSize);
}

/** Local hashes of the complete blocks of `tokens`; a partial last block is not hashed. */
export function computeBlockHashes(tokens: Uint32Array, blockSize: number, opts?: HashOptions): BigUint64Array {
  expectUint32Array(tokens, 'tokens');
  expectBlockSize(blockSize);
  const o = expectObject(opts, 'opts');
  const eagle = expectOptionalBoolean(o.eagle, 'opts.eagle');
  const seed = blockHashSeed(
    expectOptionalString(o.loraName, 'opts.loraName'),
    expectOptionalString(o.cacheNamespace, 'opts.cacheNamespace'),
  );
  const mm = encodeMultimodal(o.mmHashes);
  // The result is allocated here and filled natively: an array created by the addon would be an
  // external buffer, freed only when the event loop turns (never, in a synchronous hot loop).
  const out = allocU64(blockCount(tokens.length, blockSize, eagle));
  callNative(() => native.computeBlockHashesInto(tokens, blockSize, seed, mm?.offsets, mm?.hashes, out, eagle));
  return out;
}

/** Chained sequence hashes: seq[0] = local[0], seq[i] = XXH3(seq[i-1] ++ local[i], 1337). */
export function computeSequenceHashes(blockHashes: BigUint64Array): BigUint64Array {
  expectBigUint64Array(blockHashes, 'blockHashes');
  const out = allocU64(blockHashes.length);
  native.computeSequenceHashesInto(blockHashes, out);
  return out;
}
