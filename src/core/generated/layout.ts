// Generated from native/src/bindings/layout.rs by `npm run gen:layout`: do not edit. The offsets of
// each buffer the addon fills, by field (a field of width 3 is host, disk, external).

/**
 * The decision route() and query() write into the caller's Float64Array (routing.rs), followed
 * by `CANDIDATES` entries of `candidate`, best first.
 * (Float64Array)
 */
export const Decision = {
  WORKER: 0,
  DP_RANK: 1,
  /** Leading prompt blocks in the chosen rank's device cache. */
  OVERLAP_BLOCKS: 2,
  PROMPT_TOKENS: 3,
  CACHED_TOKENS: 4,
  PREFILL_TOKENS: 5,
  /** The native call's timings, microseconds. */
  HASH_US: 6,
  MATCH_US: 7,
  SELECT_US: 8,
  TOTAL_US: 9,
  /**
   * Reloadable blocks after the device prefix: host, disk, external.
   * (3 entries)
   */
  LOWER_TIER_BLOCKS: 10,
  /** The ttft policy's prediction, ms; NaN for other policies. */
  PREDICTED_TTFT_MS: 13,
  /** How many candidates follow (at most MAX_CANDIDATES). */
  CANDIDATES: 14,
  /** Entries in all. */
  LEN: 15,
} as const;

/**
 * One candidate of a decision's explanation.
 * (Float64Array)
 */
export const Candidate = {
  WORKER: 0,
  DP_RANK: 1,
  OVERLAP_BLOCKS: 2,
  /**
   * host, disk, external.
   * (3 entries)
   */
  LOWER_TIER_BLOCKS: 3,
  PREFILL_BLOCKS: 6,
  DECODE_BLOCKS: 7,
  /** The policy's score, lower is better. */
  COST: 8,
  /** Entries in all. */
  LEN: 9,
} as const;

/**
 * One match of findMatchesFast and copyMatches (fast.rs), in an Int32Array: Int32s, not
 * doubles, because V8 stores each as a small integer straight away.
 * (Int32Array)
 */
export const Match = {
  /** The worker id's low 32 bits (read as unsigned) and the rest. */
  WORKER_LOW: 0,
  WORKER_HIGH: 1,
  DP_RANK: 2,
  BLOCKS: 3,
  /** Entries in all. */
  LEN: 4,
} as const;

/**
 * The counts of one KV event batch (applyEventBatchInto and the async apply, events.rs); the
 * refusals in EventBatchResult.refused's order.
 * (Float64Array)
 */
export const BatchCounts = {
  EVENTS: 0,
  STORED: 1,
  REMOVED: 2,
  CLEARED: 3,
  REFUSED_BLOCK_SIZE: 4,
  REFUSED_TOKEN_COUNT: 5,
  REFUSED_UNKNOWN_PARENT: 6,
  REFUSED_DUPLICATE_HASH: 7,
  REFUSED_SELF_PARENT: 8,
  REFUSED_HASH_COLLISION: 9,
  REFUSED_INDEX_FULL: 10,
  REFUSED_MALFORMED: 11,
  REFUSED_INVALID: 12,
  REFUSED_UNKNOWN_REMOVAL: 13,
  UNKNOWN_TYPES: 14,
  OTHER_GROUPS: 15,
  /** The batch's timestamp, seconds. */
  TS: 16,
  /** The batch's own dp rank; -1 when it names none. */
  DP_RANK: 17,
  /** Entries in all. */
  LEN: 18,
} as const;

/** Candidates a decision lists at most. */
export const MAX_CANDIDATES = 8;
/** Entries of a decision buffer: the decision and room for every candidate. */
export const DECISION_LEN = 87;
