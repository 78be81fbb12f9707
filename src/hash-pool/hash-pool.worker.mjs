// Worker of the bulk hashing pool (hash-pool.ts). Plain ESM JavaScript so that the same
// file runs from the TypeScript sources (vitest, tsx) and from dist/ after tsc: a worker thread
// does not go through a TypeScript loader. The main thread imports `hashBatchTask` too, for its
// inline path, so both paths share one implementation.
import { createRequire } from 'node:module';
import { move, transferableSymbol, valueSymbol } from 'piscina';

const require = createRequire(import.meta.url);

/** @type {typeof import('../../native/binding.js')} */
// Same relative path from src/hash-pool and dist/hash-pool.
const native = require('../../native/kvroute.node');

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
 * Hashes one batch into a single fresh ArrayBuffer (the addon writes in place: no copy, and no
 * external buffer whose memory would wait for this thread's event loop to turn).
 * @param {HashBatchTask} task
 * @returns {HashBatchOutput}
 */
export function hashBatchTask(task) {
  const { tokens, offsets, blockSize, seed, sequenceHashes } = task;
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
  const hashes = new BigUint64Array(buffer, 0, count);
  const seq = sequenceHashes ? new BigUint64Array(buffer, hashBytes, count) : undefined;
  const hashOffsets = new Uint32Array(buffer, hashBytes + seqBytes, prompts);
  native.computeBlockHashesBatchInto(tokens, offsets, blockSize, seed, hashes, hashOffsets, seq);
  return { hashes, hashOffsets, sequenceHashes: seq, buffer };
}

/**
 * Piscina entry point: the result's buffer is transferred back, not copied.
 * @param {HashBatchTask} task
 * @returns {unknown} a Piscina transferable wrapping the batch result
 */
export default function hashBatchInWorker(task) {
  const out = hashBatchTask(task);
  return move({ [transferableSymbol]: [out.buffer], [valueSymbol]: out });
}
