// The simulated engine's pure model: a vLLM-like scheduler over a paged, prefix-cached KV cache.
export { EngineModel, type EngineMetrics, type StepResult } from './model.js';
export {
  DEFAULT_KV_TRANSFER,
  DEFAULT_OFFLOAD_BANDWIDTH_BYTES_PER_S,
  DEFAULT_TIMING,
  resolveEngineConfig,
  SCHEDULING_POLICIES,
  type DecodeTiming,
  type EngineConfig,
  type EngineTiming,
  type EngineTimingInput,
  type KvTransferConfig,
  type PrefillTiming,
  type ResolvedEngineConfig,
  type SchedulingPolicy,
} from './config.js';
export { applyEventsToSet, type KvEvent, type KvMedium } from './events.js';
export type { FinishReason, SimRequest, TokenOutput } from './request.js';
export { decodeMs, prefillMs, reloadMs, stepMs, transferMs } from './timing.js';
