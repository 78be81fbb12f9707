// Bulk hashing of many prompts (trace replay, event bursts) on a Piscina pool of worker threads.
// A pool round trip costs tens of microseconds, so small batches stay inline on the calling
// thread; big ones are split across the threads, with the tokens in a SharedArrayBuffer (never
// copied between threads) and the hashes transferred back.
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { native } from '../core/binding.js';
import { callNative, translateNativeError } from '../core/errors.js';
import { checkBatchOptions, expectOffsets, type BatchHashes, type BatchHashesOptions } from '../core/hashing.js';
import { SharedScratch } from './shared-scratch.js';
import { hashBatchTask, type HashBatchTask } from '../core/hash-batch.mjs';
import { describe, expectBlockSize, expectInteger, expectObject, expectUint32Array } from '../util/validate.js';

/**
 * Total tokens from which a batch goes to the pool, measured by `npm run bench` (suite "hashing",
 * bench/hashing/crossover.ts) on the 2-vCPU reference machine. Native hashing runs at memcpy
 * speed (10-20 GB/s), so the pool's round trip (~35 us) and any copy of the tokens are only
 * repaid by parallelism, which that machine barely has (its two threads hash ~1.3x as fast as
 * one). Measured there: for tokens already in a SharedArrayBuffer the pool halves the calling
 * thread's busy time from 2M tokens, and in the quieter runs beats inline latency from 4M;
 * prompts that must first be copied into one batch never beat inline latency. Below this, inline is faster. On a
 * machine with spare cores a lower `poolThresholdTokens` pays off: the benchmark shows where.
 */
export const DEFAULT_POOL_THRESHOLD_TOKENS = 1 << 22;
/** Smallest share of a batch worth a task of its own (about one round trip of hashing). */
export const DEFAULT_MIN_TASK_TOKENS = 1 << 16;
/**
 * Inline, prompts averaging at least this many tokens are hashed one native call each; smaller
 * ones are copied into one batch first. Measured here: a native call costs ~0.5 us beyond the
 * hashing, the copy ~0.1 ns per token.
 */
const PER_PROMPT_CALL_MIN_TOKENS = 3072;
/** Offsets are u32: a batch holds fewer than 2^32 tokens. */
export const MAX_BATCH_TOKENS = 0xffff_ffff;

export type HashPlacement = 'auto' | 'inline' | 'pool';

export interface HashPoolOptions {
  /** Worker threads (default: the machine's available parallelism). */
  threads?: number;
  /** Batches with at least this many tokens go to the pool (default DEFAULT_POOL_THRESHOLD_TOKENS). */
  poolThresholdTokens?: number;
  /** A pooled batch is split into at most `threads` tasks of at least this many tokens (default DEFAULT_MIN_TASK_TOKENS). */
  minTaskTokens?: number;
  /** Milliseconds an idle thread lives before exiting (Piscina's idleTimeout; default 30 s). */
  idleTimeoutMs?: number;
}

export interface BatchHashOptions extends BatchHashesOptions {
  /** 'auto' (default) chooses by size; 'inline' and 'pool' force a placement. */
  placement?: HashPlacement;
  /** Aborts the pool tasks still queued or running (the promise rejects with an AbortError). */
  signal?: AbortSignal;
}

export interface BatchHashResult extends BatchHashes {
  /** Where the batch ran. */
  placement: 'inline' | 'pool';
}

export interface PromptHashes {
  local: BigUint64Array;
  sequence?: BigUint64Array;
}

interface ValidatedOptions {
  seed: bigint;
  sequenceHashes: boolean;
  placement: HashPlacement;
  signal?: AbortSignal;
}

export interface HashPoolStats {
  /** Batches hashed on the calling thread. */
  inlineBatches: number;
  /** Batches sent to the pool, and the tasks they were split into. */
  poolBatches: number;
  poolTasks: number;
}

export class HashPool {
  readonly threads: number;
  readonly poolThresholdTokens: number;
  readonly minTaskTokens: number;
  readonly #idleTimeoutMs: number;
  #piscina: Piscina<HashBatchTask, ReturnType<typeof hashBatchTask>> | null = null;
  #closed = false;
  readonly #stats: HashPoolStats = { inlineBatches: 0, poolBatches: 0, poolTasks: 0 };
  // Recycled token buffers: up to two per thread, none over 64 MiB.
  readonly #scratch: SharedScratch;

  constructor(opts?: HashPoolOptions) {
    const o = expectObject(opts, 'opts');
    this.threads = o.threads === undefined ? availableParallelism() : expectInteger(o.threads, 'opts.threads', 1, 256);
    this.poolThresholdTokens =
      o.poolThresholdTokens === undefined
        ? DEFAULT_POOL_THRESHOLD_TOKENS
        : expectInteger(o.poolThresholdTokens, 'opts.poolThresholdTokens', 0, MAX_BATCH_TOKENS);
    this.minTaskTokens = o.minTaskTokens === undefined ? DEFAULT_MIN_TASK_TOKENS : expectInteger(o.minTaskTokens, 'opts.minTaskTokens', 1, MAX_BATCH_TOKENS);
    this.#idleTimeoutMs = o.idleTimeoutMs === undefined ? 30_000 : expectInteger(o.idleTimeoutMs, 'opts.idleTimeoutMs', 0, 2 ** 31 - 1);
    this.#scratch = new SharedScratch(2 * this.threads, 64 << 20);
  }

  get closed(): boolean {
    return this.#closed;
  }

  stats(): HashPoolStats {
    return { ...this.#stats };
  }

  /**
   * Hashes a batch laid out as one token array: prompt i is tokens[offsets[i]..offsets[i+1]].
   * Offsets must be non-decreasing and within the tokens; they need not start at 0.
   */
  async hashBatch(tokens: Uint32Array, offsets: Uint32Array, blockSize: number, opts?: BatchHashOptions): Promise<BatchHashResult> {
    this.#expectOpen();
    expectUint32Array(tokens, 'tokens');
    expectOffsets(offsets, tokens.length);
    expectBlockSize(blockSize);
    const o = validateOptions(opts);
    const total = offsets[offsets.length - 1] - offsets[0];
    if (!this.#usePool(total, o.placement)) {
      this.#stats.inlineBatches++;
      return runInline(tokens, offsets, blockSize, o);
    }
    if (tokens.buffer instanceof SharedArrayBuffer) return this.#runPooled(tokens, offsets, blockSize, o);
    // Copy the batch's tokens into shared memory once; every thread then reads it in place.
    const start = offsets[0];
    const scratch = this.#scratch.acquire(total * 4);
    try {
      const shared = new Uint32Array(scratch, 0, total);
      shared.set(tokens.subarray(start, start + total));
      const rebased = start === 0 ? offsets : offsets.map((x) => x - start);
      return await this.#runPooled(shared, rebased, blockSize, o);
    } finally {
      this.#scratch.release(scratch);
    }
  }

  /** Hashes each prompt; the placement is chosen by the batch's total token count. */
  async hashPrompts(prompts: readonly Uint32Array[], blockSize: number, opts?: BatchHashOptions): Promise<PromptHashes[]> {
    this.#expectOpen();
    if (!Array.isArray(prompts)) throw new TypeError(`prompts must be an array of Uint32Array, got ${describe(prompts)}`);
    let total = 0;
    for (let i = 0; i < prompts.length; i++) total += expectUint32Array(prompts[i], `prompts[${i}]`).length;
    if (total > MAX_BATCH_TOKENS) throw new RangeError(`a batch holds at most ${MAX_BATCH_TOKENS} tokens, got ${total}`);
    expectBlockSize(blockSize);
    const o = validateOptions(opts);
    const pooled = this.#usePool(total, o.placement);
    if (!pooled && (prompts.length === 1 || total >= prompts.length * PER_PROMPT_CALL_MIN_TOKENS)) {
      // Big prompts: one native call each costs less than copying them into one batch.
      this.#stats.inlineBatches++;
      return prompts.map((p) => hashOneInline(p, blockSize, o));
    }
    // Concatenate into (recycled) shared memory: the threads read it in place, and an inline
    // batch makes one native call for all the prompts.
    const scratch = this.#scratch.acquire(total * 4);
    try {
      const tokens = new Uint32Array(scratch, 0, total);
      const offsets = new Uint32Array(prompts.length + 1);
      for (let i = 0; i < prompts.length; i++) {
        tokens.set(prompts[i], offsets[i]);
        offsets[i + 1] = offsets[i] + prompts[i].length;
      }
      if (!pooled) {
        this.#stats.inlineBatches++;
        return splitPrompts(runInline(tokens, offsets, blockSize, o));
      }
      return splitPrompts(await this.#runPooled(tokens, offsets, blockSize, o));
    } finally {
      this.#scratch.release(scratch);
    }
  }

  /** Waits for the running batches, then stops the threads. Later calls reject. */
  async close(): Promise<void> {
    this.#closed = true;
    const piscina = this.#piscina;
    this.#piscina = null;
    this.#scratch.clear();
    await piscina?.close();
  }

  /** Stops the threads at once: running batches reject. Later calls reject. */
  async destroy(): Promise<void> {
    this.#closed = true;
    const piscina = this.#piscina;
    this.#piscina = null;
    this.#scratch.clear();
    await piscina?.destroy();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #expectOpen(): void {
    if (this.#closed) throw new Error('HashPool is closed');
  }

  #usePool(totalTokens: number, placement: HashPlacement): boolean {
    if (placement !== 'auto') return placement === 'pool';
    return totalTokens >= this.poolThresholdTokens && totalTokens > 0;
  }

  #pool(): Piscina<HashBatchTask, ReturnType<typeof hashBatchTask>> {
    // Started on first use: a HashPool that only sees small batches never spawns a thread.
    this.#piscina ??= new Piscina({
      filename: new URL('./hash-pool.worker.mjs', import.meta.url).href,
      minThreads: this.threads,
      maxThreads: this.threads,
      idleTimeout: this.#idleTimeoutMs,
    });
    return this.#piscina;
  }

  async #runPooled(tokens: Uint32Array, offsets: Uint32Array, blockSize: number, o: ValidatedOptions): Promise<BatchHashResult> {
    const pool = this.#pool();
    const parts = splitByTokens(offsets, this.threads, this.minTaskTokens);
    this.#stats.poolBatches++;
    this.#stats.poolTasks += parts.length;
    const runs = parts.map(([a, b]) =>
      pool.run({ tokens, offsets: offsets.slice(a, b + 1), blockSize, seed: o.seed, sequenceHashes: o.sequenceHashes }, { signal: o.signal ?? null }),
    );
    let outputs;
    try {
      outputs = await Promise.all(runs);
    } catch (err) {
      await Promise.allSettled(runs);
      throw translateNativeError(err);
    }
    return { ...mergeOutputs(outputs, o.sequenceHashes), placement: 'pool' };
  }
}

function validateOptions(opts: unknown): ValidatedOptions {
  const { seed, sequenceHashes } = checkBatchOptions(opts);
  const o = expectObject(opts, 'opts');
  const placement = o.placement ?? 'auto';
  if (placement !== 'auto' && placement !== 'inline' && placement !== 'pool') {
    throw new RangeError(`opts.placement must be 'auto', 'inline' or 'pool', got ${describe(placement)}`);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new TypeError(`opts.signal must be an AbortSignal, got ${describe(o.signal)}`);
  }
  return { seed, sequenceHashes, placement, signal: o.signal };
}

function runInline(tokens: Uint32Array, offsets: Uint32Array, blockSize: number, o: ValidatedOptions): BatchHashResult {
  let out;
  try {
    out = hashBatchTask({ tokens, offsets, blockSize, seed: o.seed, sequenceHashes: o.sequenceHashes });
  } catch (err) {
    throw translateNativeError(err);
  }
  return { hashes: out.hashes, hashOffsets: out.hashOffsets, sequenceHashes: out.sequenceHashes, placement: 'inline' };
}

/** hashOffsets output of single-prompt calls (always [0, n]): not needed, so shared. */
const ONE_PROMPT_OFFSETS = new Uint32Array(2);

function hashOneInline(prompt: Uint32Array, blockSize: number, o: ValidatedOptions): PromptHashes {
  const n = Math.floor(prompt.length / blockSize);
  const local = new BigUint64Array(n);
  const sequence = o.sequenceHashes ? new BigUint64Array(n) : undefined;
  callNative(() => native.computeBlockHashesBatchInto(prompt, Uint32Array.of(0, prompt.length), blockSize, o.seed, local, ONE_PROMPT_OFFSETS, sequence));
  return sequence ? { local, sequence } : { local };
}

/**
 * Splits the prompts into at most `parts` runs [a, b) of prompt indices with about equal token
 * counts, each of at least `minTokens` tokens (a split smaller than that costs more than it saves).
 */
export function splitByTokens(offsets: Uint32Array, parts: number, minTokens: number): Array<[number, number]> {
  const prompts = offsets.length - 1;
  const total = offsets[prompts] - offsets[0];
  const n = Math.max(1, Math.min(parts, prompts, Math.floor(total / Math.max(1, minTokens))));
  const runs: Array<[number, number]> = [];
  let start = 0;
  for (let k = 1; k <= n && start < prompts; k++) {
    let end = prompts;
    if (k < n) {
      const goal = offsets[0] + (total * k) / n;
      end = start + 1;
      while (end < prompts && offsets[end] < goal) end++;
    }
    runs.push([start, end]);
    start = end;
  }
  if (runs.length === 0) runs.push([0, prompts]);
  return runs;
}

function mergeOutputs(outputs: ReadonlyArray<ReturnType<typeof hashBatchTask>>, withSequence: boolean): Omit<BatchHashResult, 'placement'> {
  if (outputs.length === 1) {
    const [o] = outputs;
    return withSequence ? { hashes: o.hashes, hashOffsets: o.hashOffsets, sequenceHashes: o.sequenceHashes } : { hashes: o.hashes, hashOffsets: o.hashOffsets };
  }
  let count = 0;
  let prompts = 0;
  for (const o of outputs) {
    count += o.hashes.length;
    prompts += o.hashOffsets.length - 1;
  }
  const hashes = new BigUint64Array(count);
  const sequenceHashes = withSequence ? new BigUint64Array(count) : undefined;
  const hashOffsets = new Uint32Array(prompts + 1);
  let h = 0;
  let p = 0;
  for (const o of outputs) {
    hashes.set(o.hashes, h);
    if (sequenceHashes && o.sequenceHashes) sequenceHashes.set(o.sequenceHashes, h);
    for (let i = 1; i < o.hashOffsets.length; i++) hashOffsets[p + i] = h + o.hashOffsets[i];
    h += o.hashes.length;
    p += o.hashOffsets.length - 1;
  }
  return withSequence ? { hashes, hashOffsets, sequenceHashes } : { hashes, hashOffsets };
}

function splitPrompts(result: BatchHashResult): PromptHashes[] {
  const { hashes, hashOffsets, sequenceHashes } = result;
  const out: PromptHashes[] = new Array(hashOffsets.length - 1);
  for (let i = 0; i + 1 < hashOffsets.length; i++) {
    const a = hashOffsets[i];
    const b = hashOffsets[i + 1];
    out[i] = sequenceHashes ? { local: hashes.subarray(a, b), sequence: sequenceHashes.subarray(a, b) } : { local: hashes.subarray(a, b) };
  }
  return out;
}
