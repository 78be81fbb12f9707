// `kvroute`: block hashing, the KV indexer and the routing core over the native addon, and nothing
// else, so that importing it loads no HTTP stack, ZeroMQ, worker pool or simulator (a test checks
// which modules it loads). The rest lives in subpaths: kvroute/server, kvroute/routing,
// kvroute/events, kvroute/hash-pool, kvroute/sim (README, "Package surface").
export {
  blockHashSeed,
  computeBlockHashes,
  computeBlockHashesAsync,
  computeBlockHashesBatch,
  computeBlockHashesBatchAsync,
  computeSequenceHashes,
  type BatchHashes,
  type BatchHashesOptions,
  type HashOptions,
  type MultimodalId,
} from './core/hashing.js';
export {
  KvIndexer,
  MAX_BLOCKS_PER_CALL,
  type IndexerMode,
  type IndexerRejections,
  type IndexerStats,
  type KvIndexerOptions,
  type OverlapMatch,
  type StoredOptions,
  type RemovedOptions,
  type EventBatchResult,
  type EventDecodeError,
} from './core/indexer.js';
export {
  RoutingCore,
  POLICY_NAMES,
  type CandidateCost,
  type PolicyName,
  type QueryRequest,
  type RouteRequest,
  type RoutingConfig,
  type RoutingDecision,
  type RoutingStats,
  type RoutingTotals,
  type WorkerLoad,
  type WorkerSpec,
} from './core/routing-core.js';
export { LOWER_TIERS, DEFAULT_TIER_CREDIT, type LowerTier, type PerTier } from './core/tiers.js';
export { DEFAULT_TTFT_MODEL, type TtftModel, type TtftModelInput } from './core/ttft-model.js';
export { RoutingError, NoEligibleWorkerError, BackpressureError, MissingRoutingHintError, DuplicateRequestError } from './core/routing-errors.js';
export { NativeErrorCode } from './core/errors.js';
