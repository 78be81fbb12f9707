// What one KV event batch did (KvIndexer.applyEventBatch). The addon writes a batch's counts into
// a Float64Array the indexer keeps (positions: generated/layout.ts's BatchCounts, from
// native/src/bindings/layout.rs) and
// returns an object only for what counts cannot say (lower tiers, other media, errors): a result
// object built property by property through Node-API cost about as much as applying a few events.
// The object users get is built here, in JavaScript, where a literal of fixed shape is cheap, for
// the sync and the async call alike (the async one resolves to its own counts array).
import { BatchCounts as At } from './generated/layout.js';
import type { LowerTier } from './tiers.js';

/** Where a payload fails to be a KV event batch (or an event's field has the wrong type). */
export interface EventDecodeError {
  message: string;
  /** E.g. "events[2].token_ids[5]" ("" for the whole payload). */
  path: string;
}

/** What one KV event batch did to the index (applyEventBatch). */
export interface IndexerRejections {
  /** Stored events whose parent hash names no block of that worker. */
  unknownParent: number;
  /** Stored events repeating a hash, or reusing one that names another block of that worker. */
  duplicateHash: number;
  /** Stored events whose parent hash is one of their own blocks. */
  selfParent: number;
  /** Stored events whose block would take a sequence hash already used on another path. */
  hashCollision: number;
  /** Stored events refused because the index reached 2^31 - 1 nodes. */
  indexFull: number;
  /** Stored events with mismatched hash counts (never from this API, which throws instead). */
  malformed: number;
  /** Removed block hashes that named no block of that worker (one per hash). */
  unknownRemoval: number;
}

export interface EventBatchResult {
  /** Events in the batch. */
  events: number;
  /** Device events applied, by kind. */
  stored: number;
  removed: number;
  cleared: number;
  /** Stored events refused by reason; `unknownRemoval` counts removed hashes that named nothing. */
  refused: IndexerRejections & {
    blockSize: number;
    tokenCount: number;
    /** Events whose fields have the wrong types (the first one's error is `invalidEvent`). */
    invalid: number;
  };
  /** Events of a type the decoder does not know, and of a secondary KV cache group: skipped. */
  unknownTypes: number;
  otherGroups: number;
  /** Events applied to lower tiers (medium CPU, disk, external...), only the tiers with some. */
  lowerTiers: Array<{ tier: LowerTier; stored: number; removed: number }>;
  /** Events about a medium no engine is known to send, or about lower tiers when the indexer
   * does not keep them (`lowerTiers: false`): not applied, per medium. */
  otherMedia: Array<{ medium: string; stored: number; removed: number }>;
  /** The batch's timestamp (seconds) and its own dp rank, if it says (events go to `dpRank`). */
  ts: number;
  dpRank?: number;
  /** Set when the payload is not a valid batch: nothing was applied. */
  decodeError?: EventDecodeError;
  invalidEvent?: EventDecodeError;
  /** The worker was removed while the batch was applied (async only): the rest was dropped. */
  cancelled: boolean;
}

/** What the addon returns beside the counts when there is some (its NativeEventBatchExtras,
 * restated here so that the package's declarations do not reach into the addon's). */
interface BatchExtras {
  lowerTiers: Array<{ tier: string; stored: number; removed: number }>;
  otherMedia: Array<{ medium: string; stored: number; removed: number }>;
  decodeError?: EventDecodeError;
  invalidEvent?: EventDecodeError;
}

/** One indexer's counts array, and the result read from it after a call. */
export class EventBatchCounts {
  readonly array = new Float64Array(At.LEN);

  /** The result of the call that just wrote `array` and returned `extras`. */
  result(extras: BatchExtras | null | undefined): EventBatchResult {
    return eventBatchResult(this.array, extras, false);
  }
}

/** The result object of a batch from its counts (as the addon writes them) and extras: the same for the sync and the async call. */
export function eventBatchResult(c: Float64Array, extras: BatchExtras | null | undefined, cancelled: boolean): EventBatchResult {
  const result: EventBatchResult = {
    events: c[At.EVENTS],
    stored: c[At.STORED],
    removed: c[At.REMOVED],
    cleared: c[At.CLEARED],
    refused: {
      blockSize: c[At.REFUSED_BLOCK_SIZE],
      tokenCount: c[At.REFUSED_TOKEN_COUNT],
      unknownParent: c[At.REFUSED_UNKNOWN_PARENT],
      duplicateHash: c[At.REFUSED_DUPLICATE_HASH],
      selfParent: c[At.REFUSED_SELF_PARENT],
      hashCollision: c[At.REFUSED_HASH_COLLISION],
      indexFull: c[At.REFUSED_INDEX_FULL],
      malformed: c[At.REFUSED_MALFORMED],
      invalid: c[At.REFUSED_INVALID],
      unknownRemoval: c[At.REFUSED_UNKNOWN_REMOVAL],
    },
    unknownTypes: c[At.UNKNOWN_TYPES],
    otherGroups: c[At.OTHER_GROUPS],
    lowerTiers: extras ? (extras.lowerTiers as EventBatchResult['lowerTiers']) : [],
    otherMedia: extras ? extras.otherMedia : [],
    ts: c[At.TS],
    cancelled,
  };
  const dpRank = c[At.DP_RANK];
  if (dpRank >= 0) result.dpRank = dpRank;
  if (extras?.decodeError) result.decodeError = extras.decodeError;
  if (extras?.invalidEvent) result.invalidEvent = extras.invalidEvent;
  return result;
}
