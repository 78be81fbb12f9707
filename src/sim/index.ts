// `kvroute/sim`: simulated engines without GPUs (workers that speak the real engines' protocols, and
// their pure engine model) and trace replay (offline in virtual time, or online against a router).
export { startSimWorker, type SimWorker, type SimWorkerFaults, type SimWorkerOptions } from './worker/worker.js';
export { startSimFleet, type SimFleet, type SimFleetOptions } from './fleet.js';
export type { PdStyle } from './worker/handoff/types.js';
export { EVENT_ENCODINGS, type EventEncoding } from './worker/kv-event-encoding.js';
export { EngineModel, DEFAULT_TIMING, type EngineConfig, type EngineMetrics, type EngineTimingInput, type StepResult } from './engine/index.js';
export { runReplay, sweepLoads, type ReplayConfig, type ReplayReport, type SweepPoint } from './replay/replay.js';
export { replayMarkdown } from './replay/markdown.js';
export { REPLAY_POLICIES, type ReplayPolicy } from './replay/policies.js';
export { loadTrace, parseTrace, TraceFormatError, TRACE_BLOCK_TOKENS, type TraceRequest } from './replay/trace.js';
export { synthesizePrompt } from './replay/synth.js';
export { replayOnline, type OnlineReplayOptions, type OnlineRun } from './replay/online.js';
export type { PolicySummary } from './replay/summary.js';
