// Worker of the bulk hashing pool (hash-pool.ts). Plain ESM JavaScript so that the same file runs
// from the TypeScript sources (vitest, tsx) and from dist/ after tsc: a worker thread does not go
// through a TypeScript loader. The hashing itself is src/core/hash-batch.mjs, which the main
// thread's inline path runs too.
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { hashBatchTask } from '../core/hash-batch.mjs';

/**
 * Piscina entry point: the result's buffer is transferred back, not copied.
 * @param {import('../core/hash-batch.mjs').HashBatchTask} task
 * @returns {unknown} a Piscina transferable wrapping the batch result
 */
export default function hashBatchInWorker(task) {
  const out = hashBatchTask(task);
  return move({ [transferableSymbol]: [out.buffer], [valueSymbol]: out });
}
