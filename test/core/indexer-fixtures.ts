// Shared by the KvIndexer tests: block contents named by one number each, and a hand-moved clock.
import { computeBlockHashes } from '../../src/core/hashing.js';
import type { OverlapMatch } from '../../src/core/indexer.js';

export const BS = 4;

/** Tokens of blocks whose content is given by one number each (block [v, v+1, v+2, v+3]). */
export const tokensOf = (blocks: readonly number[]) => Uint32Array.from(blocks.flatMap((v) => [v, v + 1, v + 2, v + 3]));
export const localOf = (blocks: readonly number[], opts?: Parameters<typeof computeBlockHashes>[2]) => computeBlockHashes(tokensOf(blocks), BS, opts);
export const hashes = (...values: (number | bigint)[]) => BigUint64Array.from(values.map(BigInt));
export const match = (worker: number, blocks: number, dpRank = 0): OverlapMatch => ({ worker, dpRank, blocks });

/** A clock the test moves by hand. */
export function fakeClock(start = 1_000) {
  let now = start;
  return { clock: () => now, advance: (ms: number) => (now += ms) };
}
