// What a replay measures of each request, offline (virtual time) or online (wall time), in ms
// from the replay's start.
import type { TraceRequest } from './trace.js';

export interface RequestRecord {
  arrivalMs: number;
  /** The worker that produced the output (the decode worker; the prefill worker of a request finished at prefill). */
  worker: number;
  promptTokens: number;
  /** Prompt tokens the computing engine found in its prefix cache (usage.prompt_tokens_details.cached_tokens). */
  cachedTokens: number;
  outputTokens: number;
  firstTokenMs: number;
  finishMs: number;
  refused: boolean;
  /** Its priority class in the router queue (0 unless the trace or the replay gave one). */
  priority: number;
  /** Why it was served as it was (x-kvroute-mode-reason). */
  modeReason?: string;
}

/** The record of a request that has not arrived yet (arrival time already scaled). */
export function pendingRecord(req: TraceRequest, arrivalScale: number): RequestRecord {
  return {
    arrivalMs: req.timestamp / arrivalScale,
    worker: -1,
    promptTokens: req.inputLength,
    cachedTokens: 0,
    outputTokens: 0,
    firstTokenMs: Number.NaN,
    finishMs: Number.NaN,
    refused: false,
    priority: req.priority ?? 0,
  };
}
