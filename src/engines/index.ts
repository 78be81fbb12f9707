// Engine clients and prefill/decode handoffs: the public surface of src/engines.
export { EngineClient, EngineClients, EngineStream, type EngineCallOptions, type EngineClientOptions } from './http-client.js';
export { EngineError, type EngineFailure } from './errors.js';
export { HttpTransport } from './http-transport.js';
export type { Leg, LegStream, LegTransport } from './transport.js';
export { SseParser } from './sse.js';
export { bootstrapRoom, roomForRank, MAX_BOOTSTRAP_ROOM } from './bootstrap-room.js';
export { handoffFor, type HandoffAdapter, type PrefillOutcome } from './handoff/index.js';
export { ENGINE_KINDS, WORKER_ROLES, type EngineKind, type OpenAiRoute, type SseEvent, type WorkerInfo, type WorkerRole } from './types.js';
