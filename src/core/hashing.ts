// Dynamo-compatible block and sequence hashing (PROTOCOLS.md section 1), computed natively.
import { native } from './binding.js';
import { callNative, translateNativeError } from './errors.js';
import { hashBatchTask, hashBatchTaskAsync, type HashBatchOutput, type HashBatchTask } from './hash-batch.mjs';
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

interface CheckedHashCall {
  seed: bigint;
  mm: { offsets: Uint32Array; hashes: BigUint64Array } | undefined;
  eagle: boolean | undefined;
  blocks: number;
}

function checkHashCall(tokens: unknown, blockSize: unknown, opts: unknown): CheckedHashCall {
  const t = expectUint32Array(tokens, 'tokens');
  const bs = expectBlockSize(blockSize);
  const o = expectObject(opts, 'opts');
  const eagle = expectOptionalBoolean(o.eagle, 'opts.eagle');
  const seed = blockHashSeed(expectOptionalString(o.loraName, 'opts.loraName'), expectOptionalString(o.cacheNamespace, 'opts.cacheNamespace'));
  return { seed, mm: encodeMultimodal(o.mmHashes), eagle, blocks: blockCount(t.length, bs, eagle) };
}

/** Local hashes of the complete blocks of `tokens`; a partial last block is not hashed. */
export function computeBlockHashes(tokens: Uint32Array, blockSize: number, opts?: HashOptions): BigUint64Array {
  const { seed, mm, eagle, blocks } = checkHashCall(tokens, blockSize, opts);
  // The result is allocated here and filled natively: an array created by the addon would be an
  // external buffer, freed only when the event loop turns (never, in a synchronous hot loop).
  const out = allocU64(blocks);
  callNative(() => native.computeBlockHashesInto(tokens, blockSize, seed, mm?.offsets, mm?.hashes, out, eagle));
  return out;
}

/**
 * computeBlockHashes on a libuv thread: the same checks (a bad argument rejects with the same
 * TypeError or RangeError) and the same hashes, with the event loop free meanwhile. `tokens` is
 * read in place: do not change or transfer it until the promise settles. Worth it for large
 * prompts only: the thread hop costs tens of microseconds, about a 100k-token hash.
 */
export async function computeBlockHashesAsync(tokens: Uint32Array, blockSize: number, opts?: HashOptions): Promise<BigUint64Array> {
  const { seed, mm, eagle, blocks } = checkHashCall(tokens, blockSize, opts);
  const out = new BigUint64Array(blocks);
  try {
    await native.computeBlockHashesIntoAsync(tokens, blockSize, seed, mm?.offsets, mm?.hashes, out, eagle);
  } catch (err) {
    throw translateNativeError(err);
  }
  return out;
}

export interface BatchHashesOptions {
  loraName?: string;
  cacheNamespace?: string;
  /** Also return the chained sequence hashes of each prompt. */
  sequenceHashes?: boolean;
}

/** The hashes of a batch of prompts. */
export interface BatchHashes {
  /** All local hashes; prompt i's are hashes[hashOffsets[i]..hashOffsets[i+1]]. */
  hashes: BigUint64Array;
  /** Length prompts + 1, starting at 0. */
  hashOffsets: Uint32Array;
  /** Chained per prompt, same layout as `hashes` (when asked for). */
  sequenceHashes?: BigUint64Array;
}

/** Offsets of a batch (prompt i is tokens[offsets[i]..offsets[i+1]]): non-decreasing, within the tokens. */
export function expectOffsets(offsets: unknown, tokenCount: number): Uint32Array {
  const off = expectUint32Array(offsets, 'offsets');
  if (off.length === 0) throw new RangeError('offsets must hold at least one entry (prompts + 1)');
  for (let i = 1; i < off.length; i++) {
    if (off[i] < off[i - 1]) throw new RangeError(`offsets must be non-decreasing, but offsets[${i}] < offsets[${i - 1}]`);
  }
  if (off[off.length - 1] > tokenCount) {
    throw new RangeError(`offsets end at ${off[off.length - 1]}, past the ${tokenCount} tokens`);
  }
  return off;
}

/** The seed and sequence flag of batch options (shared with HashPool). */
export function checkBatchOptions(opts: unknown): { seed: bigint; sequenceHashes: boolean } {
  const o = expectObject(opts, 'opts');
  const seed = blockHashSeed(expectOptionalString(o.loraName, 'opts.loraName'), expectOptionalString(o.cacheNamespace, 'opts.cacheNamespace'));
  if (o.sequenceHashes !== undefined && typeof o.sequenceHashes !== 'boolean') {
    throw new TypeError(`opts.sequenceHashes must be a boolean, got ${describe(o.sequenceHashes)}`);
  }
  return { seed, sequenceHashes: o.sequenceHashes === true };
}

function checkBatch(tokens: unknown, offsets: unknown, blockSize: unknown, opts: unknown): HashBatchTask {
  const t = expectUint32Array(tokens, 'tokens');
  const off = expectOffsets(offsets, t.length);
  const bs = expectBlockSize(blockSize);
  const { seed, sequenceHashes } = checkBatchOptions(opts);
  return { tokens: t, offsets: off, blockSize: bs, seed, sequenceHashes };
}

function batchHashes(out: HashBatchOutput): BatchHashes {
  return out.sequenceHashes
    ? { hashes: out.hashes, hashOffsets: out.hashOffsets, sequenceHashes: out.sequenceHashes }
    : { hashes: out.hashes, hashOffsets: out.hashOffsets };
}

/**
 * Hashes a batch laid out as one token array, prompt i being tokens[offsets[i]..offsets[i+1]]
 * (offsets non-decreasing, within the tokens, not necessarily from 0): one native call for all.
 */
export function computeBlockHashesBatch(tokens: Uint32Array, offsets: Uint32Array, blockSize: number, opts?: BatchHashesOptions): BatchHashes {
  const task = checkBatch(tokens, offsets, blockSize, opts);
  return batchHashes(callNative(() => hashBatchTask(task)));
}

/**
 * computeBlockHashesBatch on a libuv thread: the same checks and hashes, the event loop free
 * meanwhile. The tokens and offsets are read in place: do not change them until it settles.
 */
export async function computeBlockHashesBatchAsync(
  tokens: Uint32Array,
  offsets: Uint32Array,
  blockSize: number,
  opts?: BatchHashesOptions,
): Promise<BatchHashes> {
  const task = checkBatch(tokens, offsets, blockSize, opts);
  try {
    return batchHashes(await hashBatchTaskAsync(task));
  } catch (err) {
    throw translateNativeError(err);
  }
}

/** Chained sequence hashes: seq[0] = local[0], seq[i] = XXH3(seq[i-1] ++ local[i], 1337). */
export function computeSequenceHashes(blockHashes: BigUint64Array): BigUint64Array {
  expectBigUint64Array(blockHashes, 'blockHashes');
  const out = allocU64(blockHashes.length);
  native.computeSequenceHashesInto(blockHashes, out);
  return out;
}
