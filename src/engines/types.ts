// The vocabulary shared by the engine clients and the routing orchestration: who the workers are,
// what kind of engine each runs, and what one server-sent event from an engine looks like.

import type { EngineKind, WorkerRole } from '../core/vocabulary.js';

export { ENGINE_KINDS, WORKER_ROLES, type EngineKind, type WorkerRole } from '../core/vocabulary.js';
export type OpenAiRoute = '/v1/completions' | '/v1/chat/completions';

export const OPENAI_ROUTES: readonly OpenAiRoute[] = ['/v1/completions', '/v1/chat/completions'];

export interface WorkerInfo {
  /** Integer in [0, 2^53). */
  id: number;
  role: WorkerRole;
  kind: EngineKind;
  /** http://host:port (a path prefix is allowed: routes are appended to it). */
  baseUrl: string;
  /** Data-parallel ranks this worker runs (>= 1). */
  dpSize: number;
  kvCapacityBlocks?: number;
  /** SGLang prefill workers: where decode workers meet the prefill (PROTOCOLS.md 3b). */
  bootstrapHost?: string;
  bootstrapPort?: number;
}

/** One server-sent event from an engine: `data` is the raw payload after "data: "; relay it as is. */
export interface SseEvent {
  data: string;
  /**
   * The parsed payload, when it is JSON (undefined for `[DONE]` and non-JSON payloads). Engine
   * events parse it on first read: ask only when the chunk's shape (engines/sse.ts shapeOf) is
   * not enough.
   */
  json?: unknown;
}

/** The `data` of the event that ends an OpenAI stream. */
export const SSE_DONE = '[DONE]';
