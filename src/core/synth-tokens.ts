// Synthetic prompt tokens for trace replay in the addon (native/src/sim_prompt.rs): bit for bit
// src/sim/replay/synth.ts's writeBlockTokens, for every block of a prompt in one call (a replay
// writes tens of millions of tokens per policy).
import { native } from './binding.js';
import { callNative } from './errors.js';

/**
 * Writes a prompt into `out`: block k of `blockTokens` tokens from hash id ids[k] for k < `count`
 * (the last block cut to `out`), the tokens past them zero. A RangeError for an id that is not a
 * non-negative safe integer.
 */
export function writePromptTokens(ids: Float64Array, count: number, seed: number, blockTokens: number, out: Uint32Array): void {
  callNative(() => native.simPromptTokens(ids, count, seed >>> 0, blockTokens, out));
}
