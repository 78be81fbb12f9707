// kvroute's public API.
export { computeBlockHashes, computeSequenceHashes, blockHashSeed, type HashOptions, type MultimodalId } from './core/hashing.js';
export { KvIndexer, MAX_BLOCKS_PER_CALL, type IndexerMode, type IndexerRejections, type IndexerStats, type KvIndexerOptions, type OverlapMatch, type StoredOptions, type EventBatchResult, type EventDecodeError } from './core/indexer.js';
export { HashPool, DEFAULT_POOL_THRESHOLD_TOKENS, DEFAULT_MIN_TASK_TOKENS, type BatchHashOptions, type BatchHashResult, type HashPlacement, type HashPoolOptions, type HashPoolStats, type PromptHashes } from './hash-pool/hash-pool.js';
export { RoutingCore, POLICY_NAMES, type CandidateCost, type PolicyName, type QueryRequest, type RouteRequest, type RoutingConfig, type RoutingDecision, type RoutingStats, type RoutingTotals, type WorkerLoad, type WorkerSpec } from './core/routing-core.js';
export { RoutingError, NoEligibleWorkerError, BackpressureError, MissingRoutingHintError, DuplicateRequestError } from './core/routing-errors.js';
export { NativeErrorCode } from './core/errors.js';
export * from './events/index.js';
export * from './engines/index.js';
export * from './routing/index.js';
export * from './server/index.js';
