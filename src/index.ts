// kvroute's public API.
export { computeBlockHashes, computeSequenceHashes, blockHashSeed, type HashOptions, type MultimodalId } from './core/hashing.js';
export { KvIndexer, MAX_BLOCKS_PER_CALL, type IndexerMode, type IndexerRejections, type IndexerStats, type KvIndexerOptions, type OverlapMatch, type StoredOptions } from './core/indexer.js';
export { HashPool, DEFAULT_POOL_THRESHOLD_TOKENS, type BatchHashOptions, type BatchHashResult, type HashPlacement, type HashPoolOptions, type HashPoolStats, type PromptHashes } from './core/hash-pool.js';
export * from './events/index.js';
