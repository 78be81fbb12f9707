// kvroute's public API.
export { computeBlockHashes, computeSequenceHashes, blockHashSeed, type HashOptions, type MultimodalId } from './core/hashing.js';
export * from './events/index.js';
