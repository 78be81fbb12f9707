// findMatches' result read from the Int32Array the addon wrote it into, by the field names of
// generated/layout.ts (native/src/bindings/layout.rs lays it out).
import { Match as At } from './generated/layout.js';

export interface OverlapMatch {
  worker: number;
  dpRank: number;
  /** Leading blocks of the prompt this (worker, dpRank) holds. */
  blocks: number;
}

/**
 * An OverlapMatch as readMatches builds it: constructed by a class (plain assignments, one hidden
 * class) from the int32s the addon wrote, so that its fields stay small integers (a field V8 once
 * saw a double in is boxed: a heap number per value of every later match).
 */
class Match implements OverlapMatch {
  declare worker: number;
  declare dpRank: number;
  declare blocks: number;
  constructor(worker: number, dpRank: number, blocks: number) {
    this.worker = worker;
    this.dpRank = dpRank;
    this.blocks = blocks;
  }
}

/** Int32s per match. */
export const MATCH_INTS = At.LEN;

/** The worker id of the match at `j` (any id up to 2^53). */
function workerAt(out: Int32Array, j: number): number {
  return out[j + At.WORKER_HIGH] * 2 ** 32 + (out[j + At.WORKER_LOW] >>> 0);
}

/** The matches in `out`, from what findMatchesFast returned: the count times 2, plus 1 when a worker id needs its high int. */
export function readMatches(out: Int32Array, r: number): OverlapMatch[] {
  const n = r >>> 1;
  const matches: OverlapMatch[] = new Array(n);
  if ((r & 1) === 0) {
    // Every worker id below 2^31: its low int is the id, and ints are stored as they are.
    for (let i = 0, j = 0; i < n; i++, j += MATCH_INTS) matches[i] = new Match(out[j + At.WORKER_LOW], out[j + At.DP_RANK], out[j + At.BLOCKS]);
  } else {
    for (let i = 0, j = 0; i < n; i++, j += MATCH_INTS) matches[i] = new Match(workerAt(out, j), out[j + At.DP_RANK], out[j + At.BLOCKS]);
  }
  return matches;
}

/** The first `fit` matches of `src` into `out` as [worker, dpRank, blocks] doubles. */
export function copyMatchTriples(src: Int32Array, fit: number, out: Float64Array): void {
  for (let i = 0, j = 0, k = 0; i < fit; i++, j += MATCH_INTS, k += 3) {
    out[k] = workerAt(src, j);
    out[k + 1] = src[j + At.DP_RANK];
    out[k + 2] = src[j + At.BLOCKS];
  }
}
