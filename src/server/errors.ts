// OpenAI-style error bodies, {"error":{"message","type","code"}}, and the one mapping from what
// can go wrong (bad input, routing refusals, engine failures) to an HTTP status.

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
  new HttpError(413, 'invalid_request_error', 'payload_too_large', `request body exceeds the limit of ${limit} bytes`);

/** Body bytes of an OpenAI-style error. */
export function errorBody(message: string, type: string, code: string): string {
  return JSON.stringify({ error: { message, type, code } });
}

/** Retry-After for refusals that carry no estimate (503: nothing can serve right now). */
const DEFAULT_RETRY_AFTER_S = 1;

/**
 * Maps anything thrown while serving a request to its reply. Routing refusals and engine errors
 * are recognised by shape (`code` of RoutingError, `status`/`body` of EngineError) so that this
 * module stays below the routing layer.
 */
export function errorReply(err: unknown): ErrorReply {
  if (err instanceof HttpError) return reply(err.status, err.message, err.type, err.code, err.headers);
  const routing = routingErrorReply(err);
  if (routing) return routing;
  const engine = engineErrorReply(err);
  if (engine) return engine;
  if (err instanceof TypeError || err instanceof RangeError) {
    return reply(400, err.message, 'invalid_request_error', 'invalid_value');
  }
  if (isAbort(err)) return reply(499, 'request aborted', 'request_aborted', 'client_closed_request');
  const message = err instanceof Error ? err.message : String(err);
  return reply(500, `internal error: ${message}`, 'internal_error', 'internal_error');
}

function routingErrorReply(err: unknown): ErrorReply | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || (err as { status?: unknown }).status !== undefined) return undefined;
  switch (code) {
    case 'backpressure': {
      const ms = Number((err as { retryAfterMs?: unknown }).retryAfterMs);
      const seconds = Number.isFinite(ms) && ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : DEFAULT_RETRY_AFTER_S;
      return reply(429, err.message, 'rate_limit_error', code, { 'retry-after': String(seconds) });
    }
    case 'no_eligible_worker':
    case 'no_workers':
    case 'no_prefill_workers':
    case 'disaggregation_required':
      return reply(503, err.message, 'service_unavailable', code, { 'retry-after': String(DEFAULT_RETRY_AFTER_S) });
    case 'missing_routing_hint':
      return reply(400, err.message, 'invalid_request_error', code);
    case 'duplicate_request_id':
      return reply(409, err.message, 'invalid_request_error', code);
    default:
      return undefined;
  }
}

/** EngineError { status, body }: the engine answered with an error, or could not be reached. */
function engineErrorReply(err: unknown): ErrorReply | undefined {
  if (!(err instanceof Error)) return undefined;
  const status = (err as { status?: unknown }).status;
  if (typeof status !== 'number') return undefined;
  const body = (err as { body?: unknown }).body;
  const engineMessage = errorMessageOf(body) ?? err.message;
  // The engine's own 4xx judgement of the request (prompt too long, bad parameter) is the client's
  // answer; anything else is a gateway failure, never blamed on the client.
  if (status >= 400 && status < 500 && status !== 408) {
    const e = (body as { error?: { type?: unknown; code?: unknown } } | undefined)?.error;
    const type = typeof e?.type === 'string' ? e.type : 'invalid_request_error';
    const code = typeof e?.code === 'string' ? e.code : typeof e?.code === 'number' ? String(e.code) : 'engine_rejected';
    return reply(status, engineMessage, type, code);
  }
  if (status === 429 || status === 503) {
    return reply(status, `engine unavailable: ${engineMessage}`, 'service_unavailable', 'engine_unavailable', {
      'retry-after': String(DEFAULT_RETRY_AFTER_S),
    });
  }
  return reply(502, `engine failed: ${engineMessage}`, 'engine_error', 'bad_gateway');
}

function errorMessageOf(body: unknown): string | undefined {
  if (typeof body === 'string' && body.length > 0) return body.slice(0, 2000);
  const e = (body as { error?: unknown } | undefined)?.error;
  if (typeof e === 'string') return e;
  const m = (e as { message?: unknown } | undefined)?.message;
  if (typeof m === 'string') return m;
  const detail = (body as { message?: unknown; detail?: unknown } | undefined);
  if (typeof detail?.message === 'string') return detail.message;
  if (typeof detail?.detail === 'string') return detail.detail;
  return undefined;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR');
}

function reply(status: number, message: string, type: string, code: string, extra: Record<string, string> = {}): ErrorReply {
  return {
    status,
    headers: { 'content-type': 'application/json', ...extra },
    body: errorBody(message, type, code),
  };
}

/** The SSE frame that ends a stream that failed after its headers were sent. */
export function errorEventFrame(err: unknown): string {
  const r = errorReply(err);
  return `data: ${r.body}\n\n`;
}
