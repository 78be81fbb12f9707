// OpenAI-style error bodies, {"error":{"message","type","code"}}, and the one mapping from what
// can go wrong (bad input, routing refusals, engine failures) to an HTTP status.
import { BackpressureError, DuplicateRequestError, MissingRoutingHintError, RoutingError } from '../../core/routing-errors.js';
import { describeFailure, EngineError, isAbortError } from '../../engines/errors.js';

export interface ErrorReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An error that already knows its HTTP answer. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, code = 'invalid_request') => new HttpError(400, 'invalid_request_error', code, message);
export const notFound = (message: string, code = 'not_found') => new HttpError(404, 'invalid_request_error', code, message);
export const payloadTooLarge = (limit: number) =>
  new HttpError(413, 'invalid_request_error', 'payload_too_large', `request body exceeds the router's limit of ${limit} bytes (--max-body-bytes)`);

/** Body bytes of an OpenAI-style error. */
export function errorBody(message: string, type: string, code: string): string {
  return JSON.stringify({ error: { message, type, code } });
}

/** Retry-After for refusals that carry no estimate (503: nothing can serve right now). */
const DEFAULT_RETRY_AFTER_S = 1;

/** Names an engine by its worker id: an answer never carries an engine's URL. */
export type WorkerOf = (engineUrl: string) => number | undefined;

/**
 * Maps anything thrown while serving a request to its reply: routing refusals (RoutingError and
 * its subclasses), engine failures (EngineError: the worker named by id, never by URL, and no
 * transport error text, which goes to the log), bad input (TypeError/RangeError, 400), a cancelled
 * request (499), anything else (500).
 */
export function errorReply(err: unknown, workerOf?: WorkerOf): ErrorReply {
  if (err instanceof HttpError) return reply(err.status, err.message, err.type, err.code, err.headers);
  if (err instanceof RoutingError) return routingErrorReply(err);
  if (err instanceof EngineError) return engineErrorReply(err, workerOf);
  if (err instanceof TypeError || err instanceof RangeError) {
    const code = (err as { code?: unknown }).code;
    return reply(400, err.message, 'invalid_request_error', typeof code === 'string' ? code : 'invalid_value');
  }
  if (isAbortError(err)) return reply(499, 'request aborted', 'request_aborted', 'client_closed_request');
  const message = err instanceof Error ? err.message : String(err);
  return reply(500, `internal error: ${message}`, 'internal_error', 'internal_error');
}

function routingErrorReply(err: RoutingError): ErrorReply {
  if (err instanceof BackpressureError) {
    const ms = err.retryAfterMs;
    const seconds = Number.isFinite(ms) && ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : DEFAULT_RETRY_AFTER_S;
    return reply(429, err.message, 'rate_limit_error', err.code, { 'retry-after': String(seconds) });
  }
  if (err instanceof MissingRoutingHintError) return reply(400, err.message, 'invalid_request_error', err.code);
  if (err instanceof DuplicateRequestError) return reply(409, err.message, 'invalid_request_error', err.code);
  // No eligible worker, disaggregation required without prefill workers, ...: the fleet cannot serve now.
  return reply(503, err.message, 'service_unavailable', err.code, { 'retry-after': String(DEFAULT_RETRY_AFTER_S) });
}

function engineErrorReply(err: EngineError, workerOf: WorkerOf | undefined): ErrorReply {
  const { status, body } = err;
  const id = err.engine === undefined ? undefined : workerOf?.(err.engine);
  const who = id === undefined ? 'the engine' : `worker ${id}`;
  const engineMessage = errorMessageOf(body) ?? `${who} answered ${status}`;
  // The engine's own 4xx judgement of the request (prompt too long, bad parameter) is the client's
  // answer; anything else is a gateway failure, never blamed on the client.
  if (err.failure === 'engine_rejected' && status >= 400 && status < 500 && status !== 408 && status !== 429) {
    const e = (body as { error?: { type?: unknown; code?: unknown } } | undefined)?.error;
    const type = typeof e?.type === 'string' ? e.type : 'invalid_request_error';
    const code = typeof e?.code === 'string' ? e.code : typeof e?.code === 'number' ? String(e.code) : 'engine_rejected';
    // The router took the body; the engine's own limit refused what the router made of it.
    if (status === 413)
      return reply(413, `${who} refused the request as too large (the router passed it on under its own limit): ${engineMessage}`, type, code);
    return reply(status, engineMessage, type, code);
  }
  if (err.failure === 'engine_rejected' && (status === 429 || status === 503)) {
    return reply(503, `engine unavailable (${who}): ${engineMessage}`, 'service_unavailable', 'engine_unavailable', {
      'retry-after': String(DEFAULT_RETRY_AFTER_S),
    });
  }
  // No engine got the request (refused connections, failover exhausted or impossible): nothing ran,
  // so the client may safely send it again.
  if (!err.mayHaveAccepted) {
    return reply(503, `${describeFailure(err.failure)} (${who}): no engine got the request, it may be sent again`, 'service_unavailable', err.failure, {
      'retry-after': String(DEFAULT_RETRY_AFTER_S),
    });
  }
  const gateway = status === 504 ? 504 : 502;
  if (err.failure === 'engine_rejected') return reply(gateway, `engine failed (${who}): ${engineMessage}`, 'engine_error', 'engine_failed');
  return reply(gateway, `${describeFailure(err.failure)} (${who})`, 'engine_error', err.failure);
}

function errorMessageOf(body: unknown): string | undefined {
  if (typeof body === 'string' && body.length > 0) return body.slice(0, 2000);
  const e = (body as { error?: unknown } | undefined)?.error;
  if (typeof e === 'string') return e;
  const m = (e as { message?: unknown } | undefined)?.message;
  if (typeof m === 'string') return m;
  const detail = body as { message?: unknown; detail?: unknown } | undefined;
  if (typeof detail?.message === 'string') return detail.message;
  if (typeof detail?.detail === 'string') return detail.detail;
  return undefined;
}

function reply(status: number, message: string, type: string, code: string, extra: Record<string, string> = {}): ErrorReply {
  return {
    status,
    headers: { 'content-type': 'application/json', ...extra },
    body: errorBody(message, type, code),
  };
}

/** The SSE frame that ends a stream that failed after its headers were sent. */
export function errorEventFrame(err: unknown, workerOf?: WorkerOf): string {
  const r = errorReply(err, workerOf);
  return `data: ${r.body}\n\n`;
}

/** The status, OpenAI error code and message a client gets for `err` (metrics, spans). */
export function errorSummary(err: unknown, workerOf?: WorkerOf): { status: number; code: string; message: string } {
  const r = errorReply(err, workerOf);
  const { code, message } = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
  return { status: r.status, code, message };
}
