// Hashing of a batch of prompts laid out in one token array, synchronously or on a libuv thread.
// Plain ESM JavaScript: the hash pool's worker threads run it too (they do not go through a
// TypeScript loader), and so do the main thread's inline path and the batch functions of
// hashing.ts, so every path shares one implementation.
import { loadNative } from './native-loader.mjs';

/** @type {typeof import('../../native/binding.js')} */
const native = /** @type {any} */ (loadNative().binding);

/**
 * One batch: prompt i is tokens[offsets[i]..offsets[i+1]] (offsets need not start at 0).
 * @typedef {object} HashBatchTask
 * @property {Uint32Array} tokens  usually a view on a SharedArrayBuffer, so no copy crosses threads
 * @property {Uint32Array} offsets
 * @property {number} blockSize
 * @property {bigint} seed
 * @property {boolean} sequenceHashes
 */

/**
 * All local hashes concatenated; prompt i's are hashes[hashOffsets[i]..hashOffsets[i+1]].
 * Every array is a view on one ArrayBuffer (`buffer`), so a worker hands it back by transfer.
 * @typedef {object} HashBatchOutput
 * @property {BigUint64Array} hashes
 * @property {Uint32Array} hashOffsets
 * @property {BigUint64Array | undefined} sequenceHashes  chained per prompt (restarting at each prompt)
 * @property {ArrayBuffer} buffer
 */

/**
 * Checks a batch and allocates its output in a single fresh ArrayBuffer (the addon writes in
 * place: no copy, and no external buffer whose memory would wait for the event loop to turn).
 * @param {HashBatchTask} task
 * @returns {HashBatchOutput}
 */
function allocateOutput(task) {
  const { tokens, offsets, blockSize, sequenceHashes } = task;
  if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
  if (offsets.length === 0) throw new RangeError('offsets must hold at least one entry (prompts + 1)');
  let count = 0;
  for (let i = 1; i < offsets.length; i++) {
    const span = offsets[i] - offsets[i - 1];
    if (span < 0 || offsets[i] > tokens.length) throw new RangeError('offsets must be non-decreasing and within the tokens');
    count += Math.floor(span / blockSize);
  }
  const prompts = offsets.length;
  const hashBytes = count * 8;
  const seqBytes = sequenceHashes ? count * 8 : 0;
  const buffer = new ArrayBuffer(hashBytes + seqBytes + prompts * 4);
  return {
    hashes: new BigUint64Array(buffer, 0, count),
    sequenceHashes: sequenceHashes ? new BigUint64Array(buffer, hashBytes, count) : undefined,
    hashOffsets: new Uint32Array(buffer, hashBytes + seqBytes, prompts),
    buffer,
  };
}

/**
 * Hashes one batch on the calling thread.
 * @param {HashBatchTask} task
 * @returns {HashBatchOutput}
 */
export function hashBatchTask(task) {
  const out = allocateOutput(task);
  native.computeBlockHashesBatchInto(task.tokens, task.offsets, task.blockSize, task.seed, out.hashes, out.hashOffsets, out.sequenceHashes);
  return out;
}

/**
 * Hashes one batch on a libuv thread; the arguments are checked before the work is queued, so bad
 * ones throw here exactly as in hashBatchTask. The tokens and offsets must not change until the
 * promise settles (they are read in place).
 * @param {HashBatchTask} task
 * @returns {Promise<HashBatchOutput>}
 */
export async function hashBatchTaskAsync(task) {
  const out = allocateOutput(task);
  await native.computeBlockHashesBatchIntoAsync(task.tokens, task.offsets, task.blockSize, task.seed, out.hashes, out.hashOffsets, out.sequenceHashes);
  return out;
}
