// `kvroute/hash-pool`: bulk hashing of many prompts on a Piscina pool of worker threads.
export {
  HashPool,
  DEFAULT_POOL_THRESHOLD_TOKENS,
  DEFAULT_MIN_TASK_TOKENS,
  type BatchHashOptions,
  type BatchHashResult,
  type HashPlacement,
  type HashPoolOptions,
  type HashPoolStats,
  type PromptHashes,
} from './hash-pool.js';
