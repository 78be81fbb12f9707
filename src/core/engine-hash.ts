// The simulated engine's block hash (src/sim/engine/block-hash.ts) over a run of blocks, in the
// addon (native/src/sim_hash.rs): bit for bit the TypeScript hash, several times faster, for the
// engines of a trace replay, which hash every prompt token.
import { native } from './binding.js';
import { callNative } from './errors.js';

/**
 * Writes the engine hashes of `count` blocks of `blockSize` tokens of `tokens` from token `from`,
 * chained (the first to the hash with halves (parentHi, parentLo)), into `out[at, at + count)`.
 * A RangeError when the tokens or `out` are too short.
 */
export function engineHashBlocks(
  tokens: Uint32Array,
  from: number,
  blockSize: number,
  count: number,
  parentHi: number,
  parentLo: number,
  lora: number,
  out: BigUint64Array,
  at: number,
): void {
  callNative(() => native.simEngineHashBlocks(tokens, from, blockSize, count, parentHi >>> 0, parentLo >>> 0, lora >>> 0, out, at));
}
