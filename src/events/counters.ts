// Per-worker ingestion counters: what arrived, what the index took, and every way a batch or an
// event can fail to reach it. Plain numbers, summed over the worker's dp ranks in stats().

export interface IngestCounters {
  /** Batches decoded (live and replayed). */
  batches: number;
  /** Events applied to the index (stored, removed, cleared, on the device or a lower tier). */
  applied: number;
  /** Of those, events about blocks on a lower tier (medium CPU, disk, external...). */
  lowerTierEvents: number;
  /** Events the index refused, by reason (blockSize, tokenCount, unknownParent, duplicateHash,
   * invalid (fields of the wrong type), ...), and unknownRemoval: removed hashes naming nothing. */
  rejected: Record<string, number>;
  /** Messages or replies whose frames or msgpack payload could not be decoded. */
  decodeErrors: number;
  /** Connections to the publisher joined (the first and each reconnect); with a replay service,
   * counted once the join probe is over. */
  joins: number;
  /** Sequence gaps seen on the live feed. */
  gaps: number;
  /** Replay requests sent to repair a gap or catch a restored index up (join probes not counted). */
  replays: number;
  /** Batches applied from replays. */
  replayedBatches: number;
  /** Replays that failed (timeout, no replay endpoint, bad reply): the index was cleared. */
  replayFailures: number;
  /** Gaps older than the engine's replay buffer: the index was cleared and rebuilt from then on. */
  replayTooOld: number;
  /** Sequence numbers going back (engine restarts): the index was cleared. */
  restarts: number;
  /** Live batches already applied by a replay that overtook the live feed. */
  duplicates: number;
  /** Events of a type the decoder does not know: skipped. */
  unknownEventTypes: number;
  /** Events of a secondary KV cache group (hybrid models): skipped. */
  otherGroupEvents: number;
  /** Events about a medium no engine is known to send, or about lower tiers when the index does
   * not keep them: not indexed. */
  ignoredMedium: number;
  /** The same, per medium as the engine names it ("CPU", "DISK"...). */
  ignoredByMedium: Record<string, number>;
}

export function newCounters(): IngestCounters {
  return {
    batches: 0,
    applied: 0,
    lowerTierEvents: 0,
    rejected: {},
    decodeErrors: 0,
    joins: 0,
    gaps: 0,
    replays: 0,
    replayedBatches: 0,
    replayFailures: 0,
    replayTooOld: 0,
    restarts: 0,
    duplicates: 0,
    unknownEventTypes: 0,
    otherGroupEvents: 0,
    ignoredMedium: 0,
    ignoredByMedium: {},
  };
}

export function countRejection(counters: IngestCounters, reason: string, n = 1): void {
  counters.rejected[reason] = (counters.rejected[reason] ?? 0) + n;
}

/** Adds `from` into `into` (for a worker's total over its dp ranks). */
export function addCounters(into: IngestCounters, from: IngestCounters): IngestCounters {
  for (const key of Object.keys(from) as Array<keyof IngestCounters>) {
    if (key === 'rejected') {
      for (const [reason, n] of Object.entries(from.rejected)) countRejection(into, reason, n);
    } else if (key === 'ignoredByMedium') {
      for (const [medium, n] of Object.entries(from.ignoredByMedium)) into.ignoredByMedium[medium] = (into.ignoredByMedium[medium] ?? 0) + n;
    } else {
      into[key] += from[key];
    }
  }
  return into;
}
