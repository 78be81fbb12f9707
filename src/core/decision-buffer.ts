// A routing decision read from the Float64Array the addon wrote it into, by the field names of
// generated/layout.ts (native/src/bindings/layout.rs lays it out). RoutingCore reuses one buffer per
// core, so nothing but the result objects is allocated per decision.
import { Candidate as At, Decision as D } from './generated/layout.js';
import { smallInt } from './small-int.js';
import { perTierBlocksAt, type PerTier } from './tiers.js';
import type { PolicyName } from './vocabulary.js';

export interface CandidateCost {
  worker: number;
  dpRank: number;
  /** Leading prompt blocks in the worker's device (GPU) cache. */
  overlapBlocks: number;
  /** The blocks after those it can reload from each lower tier (each block once, at its nearest tier). */
  lowerTierBlocks: PerTier;
  /** (booked prefill tokens + this prompt's tokens) / block size. */
  prefillBlocks: number;
  /** Booked decode blocks (with decay) + this request's blocks not yet active there. */
  decodeBlocks: number;
  /** The policy's score, lower is better (the KV cost; for ttft the predicted TTFT plus the worker's time on this request's own prefill, ms; booked load for least_loaded). */
  cost: number;
}

export interface RoutingDecision {
  requestId: string;
  worker: number;
  dpRank: number;
  /** Leading prompt blocks in the chosen worker's device cache. */
  overlapBlocks: number;
  /** The blocks after those it can reload from lower tiers. */
  lowerTierBlocks: PerTier;
  promptTokens: number;
  /** (overlapBlocks + lower-tier blocks) x blockSize, at most promptTokens. */
  cachedTokens: number;
  /** Prefill tokens booked: promptTokens - cachedTokens. */
  prefillTokens: number;
  /** The ttft policy's predicted time to first token on the chosen worker, ms (undefined for other policies). */
  predictedTtftMs?: number;
  policy: PolicyName;
  /** Best first, at most 8; the chosen worker is always listed. */
  candidates: CandidateCost[];
  /** Measured inside the native call, in microseconds. */
  timingsUs: { hash: number; match: number; select: number; total: number };
}

/** A CandidateCost as readDecision builds it: a class (one hidden class, plain assignments), which V8
 * allocates faster than object literals filled from a Float64Array. */
class Candidate implements CandidateCost {
  declare worker: number;
  declare dpRank: number;
  declare overlapBlocks: number;
  declare lowerTierBlocks: PerTier;
  declare prefillBlocks: number;
  declare decodeBlocks: number;
  declare cost: number;
  constructor(worker: number, dpRank: number, overlapBlocks: number, lowerTierBlocks: PerTier, prefillBlocks: number, decodeBlocks: number, cost: number) {
    this.worker = worker;
    this.dpRank = dpRank;
    this.overlapBlocks = overlapBlocks;
    this.lowerTierBlocks = lowerTierBlocks;
    this.prefillBlocks = prefillBlocks;
    this.decodeBlocks = decodeBlocks;
    this.cost = cost;
  }
}

/** The decision in `out` with its `n` candidates (the count the addon returned). */
export function readDecision(out: Float64Array, n: number, requestId: string, policy: PolicyName): RoutingDecision {
  const candidates: CandidateCost[] = new Array(n);
  for (let i = 0, o = D.LEN; i < n; i++, o += At.LEN) {
    // Ids and counts as Smis (small-int.ts); the loads and the cost stay doubles.
    candidates[i] = new Candidate(
      smallInt(out[o + At.WORKER]),
      smallInt(out[o + At.DP_RANK]),
      smallInt(out[o + At.OVERLAP_BLOCKS]),
      perTierBlocksAt(out, o + At.LOWER_TIER_BLOCKS),
      out[o + At.PREFILL_BLOCKS],
      out[o + At.DECODE_BLOCKS],
      out[o + At.COST],
    );
  }
  const ttft = out[D.PREDICTED_TTFT_MS];
  return {
    requestId,
    worker: smallInt(out[D.WORKER]),
    dpRank: smallInt(out[D.DP_RANK]),
    overlapBlocks: smallInt(out[D.OVERLAP_BLOCKS]),
    lowerTierBlocks: perTierBlocksAt(out, D.LOWER_TIER_BLOCKS),
    promptTokens: smallInt(out[D.PROMPT_TOKENS]),
    cachedTokens: smallInt(out[D.CACHED_TOKENS]),
    prefillTokens: smallInt(out[D.PREFILL_TOKENS]),
    predictedTtftMs: Number.isNaN(ttft) ? undefined : ttft,
    policy,
    candidates,
    timingsUs: { hash: out[D.HASH_US], match: out[D.MATCH_US], select: out[D.SELECT_US], total: out[D.TOTAL_US] },
  };
}
