// Engine clients: the public surface of src/engines (published through kvroute/routing). The SSE
// parser, the bootstrap rooms and the prefill/decode handoff adapters are internal.
export { EngineClient, EngineClients, EngineStream, type EngineCallOptions, type EngineClientOptions } from './http-client.js';
export { EngineError, type EngineFailure } from './errors.js';
export { HttpTransport } from './http-transport.js';
export type { Leg, LegStream, LegTransport, SessionCall } from './transport.js';
export { ENGINE_KINDS, WORKER_ROLES, type EngineKind, type OpenAiRoute, type SseEvent, type WorkerInfo, type WorkerRole } from './types.js';
