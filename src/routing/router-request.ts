// The PrefillRouter's request and response: what a frontend hands over after parsing and
// tokenizing, and what it relays back (status, headers, and a pull-based stream or a JSON body).
import { isSignalLike, type SignalLike } from '../util/cancellation.js';
import { describe, expectInteger, expectUint32Array, isShortVisibleAscii } from '../util/validate.js';
import { OPENAI_ROUTES, type OpenAiRoute, type SseEvent } from '../engines/types.js';
import { checkSessionId, type RoutingHints } from './hints.js';
import type { RequestTrace } from './request-trace.js';
import { PRIORITY_JUMP_MAX, PRIORITY_MAX, PRIORITY_MIN } from './scheduling-hints.js';

export interface RouterRequest {
  route: OpenAiRoute;
  /** The client's body (the prompt as token ids); legs add only what routing and handoffs need. */
  body: Record<string, unknown>;
  /** The prompt's token ids, as the engines will see them. */
  tokens: Uint32Array;
  /** Sent to engines as X-Request-Id and used as the booking id. */
  requestId: string;
  hints: RoutingHints;
  /** The client's: aborting it (client disconnect) ends the request's legs and frees its bookings. */
  signal: SignalLike;
  loraName?: string;
  /** The request's trace, when tracing is on: routing adds its decisions, queue waits and legs. */
  trace?: RequestTrace;
}

export interface RoutedResponse {
  status: number;
  /**
   * x-request-id; x-kvroute-mode (aggregated, disaggregated, fallback); x-kvroute-prefill-worker
   * and x-kvroute-prefill-dp-rank (disaggregated); x-kvroute-decode-worker and
   * x-kvroute-decode-dp-rank; x-kvroute-overlap-blocks (blocks the computing worker already held).
   */
  headers: Record<string, string>;
  /** When the client asked for a stream: pulled by the frontend, so a slow client pauses the engine read. */
  stream?: AsyncIterable<SseEvent>;
  /** The non-streamed JSON answer. */
  body?: unknown;
}

/** Checks a RouterRequest from a frontend: TypeError/RangeError naming the bad field. */
export function validateRouterRequest(value: unknown): RouterRequest {
  if (value === null || typeof value !== 'object') throw new TypeError(`request must be an object, got ${describe(value)}`);
  const r = value as Partial<RouterRequest>;
  if (typeof r.route !== 'string' || !OPENAI_ROUTES.includes(r.route)) {
    throw new TypeError(`request.route must be one of ${OPENAI_ROUTES.join(', ')}, got ${describe(r.route)}`);
  }
  if (r.body === null || typeof r.body !== 'object' || Array.isArray(r.body)) throw new TypeError(`request.body must be an object, got ${describe(r.body)}`);
  expectUint32Array(r.tokens, 'request.tokens');
  if (typeof r.requestId !== 'string') throw new TypeError(`request.requestId must be a string, got ${describe(r.requestId)}`);
  if (!isShortVisibleAscii(r.requestId)) throw new RangeError('request.requestId must be 1 to 256 visible ASCII characters');
  if (!isSignalLike(r.signal)) throw new TypeError(`request.signal must be an AbortSignal, got ${describe(r.signal)}`);
  if (r.loraName !== undefined && typeof r.loraName !== 'string') throw new TypeError(`request.loraName must be a string, got ${describe(r.loraName)}`);
  if (r.hints === null || typeof r.hints !== 'object') throw new TypeError(`request.hints must be an object, got ${describe(r.hints)}`);
  const h = r.hints;
  if (h.workerId !== undefined) expectInteger(h.workerId, 'hints.workerId', 0, Number.MAX_SAFE_INTEGER);
  if (h.prefillWorkerId !== undefined) expectInteger(h.prefillWorkerId, 'hints.prefillWorkerId', 0, Number.MAX_SAFE_INTEGER);
  if (h.dpRank !== undefined) expectInteger(h.dpRank, 'hints.dpRank', 0, 0xffff);
  if (h.prefillDpRank !== undefined) expectInteger(h.prefillDpRank, 'hints.prefillDpRank', 0, 0xffff);
  if (h.sessionId !== undefined) {
    if (typeof h.sessionId !== 'string') throw new TypeError(`hints.sessionId must be a string, got ${describe(h.sessionId)}`);
    checkSessionId(h.sessionId, 'hints.sessionId');
  }
  checkSchedulingHints(h);
  if (r.body.stream !== undefined && typeof r.body.stream !== 'boolean') throw new TypeError(`body.stream must be a boolean, got ${describe(r.body.stream)}`);
  return r as RouterRequest;
}

function checkSchedulingHints(h: RoutingHints): void {
  if (h.priority !== undefined) expectInteger(h.priority, 'hints.priority', PRIORITY_MIN, PRIORITY_MAX);
  if (h.priorityJump !== undefined && (typeof h.priorityJump !== 'number' || !(h.priorityJump >= 0 && h.priorityJump <= PRIORITY_JUMP_MAX))) {
    throw new RangeError(`hints.priorityJump must be a number in [0, ${PRIORITY_JUMP_MAX}], got ${describe(h.priorityJump)}`);
  }
  if (h.expectedOutputTokens !== undefined) expectInteger(h.expectedOutputTokens, 'hints.expectedOutputTokens', 1, 2 ** 32 - 1);
  const sc = h.sessionControl;
  if (sc !== undefined) {
    if (sc === null || typeof sc !== 'object') throw new TypeError(`hints.sessionControl must be an object, got ${describe(sc)}`);
    if (typeof sc.sessionId !== 'string') throw new TypeError(`hints.sessionControl.sessionId must be a string, got ${describe(sc.sessionId)}`);
    checkSessionId(sc.sessionId, 'hints.sessionControl.sessionId');
    if (sc.action !== undefined && sc.action !== 'open' && sc.action !== 'close')
      throw new RangeError(`hints.sessionControl.action must be 'open' or 'close', got ${describe(sc.action)}`);
    if (sc.timeoutS !== undefined) expectInteger(sc.timeoutS, 'hints.sessionControl.timeoutS', 1, 86_400);
  }
}

/** The output length expected of a request: its hint, else what the client allows (max_tokens). */
export function expectedOutputOf(req: RouterRequest): number | undefined {
  return req.hints.expectedOutputTokens ?? expectedOutputTokens(req.body);
}

/** The output length the client allows, for the booking's expected decode growth. */
export function expectedOutputTokens(body: Record<string, unknown>): number | undefined {
  const v = body.max_completion_tokens ?? body.max_tokens;
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}
