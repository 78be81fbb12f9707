// Refusals of a routing decision, typed so that frontends can map them (503, 429 with
// Retry-After, 400, 409). Malformed arguments are TypeError/RangeError instead, never these.

/** A routing refusal; `code` is stable and goes into OpenAI-style error bodies. */
export class RoutingError extends Error {
  override name = 'RoutingError';
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** No worker may take the request: empty pool, all busy, or outside the allowed/pinned ones. */
export class NoEligibleWorkerError extends RoutingError {
  override name = 'NoEligibleWorkerError';
  constructor(message = 'no eligible worker') {
    super(message, 'no_eligible_worker');
  }
}

/** The pool's queued prefill tokens would pass the configured cap; retry after `retryAfterMs`. */
export class BackpressureError extends RoutingError {
  override name = 'BackpressureError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message, 'backpressure');
  }
}

/** Policy 'direct' (or a direct prefill pool) without the worker hint it needs. */
export class MissingRoutingHintError extends RoutingError {
  override name = 'MissingRoutingHintError';
  constructor(message = "policy 'direct' needs a pinned worker") {
    super(message, 'missing_routing_hint');
  }
}

/** A request id that is already booked (ids must be unique among active requests). */
export class DuplicateRequestError extends RoutingError {
  override name = 'DuplicateRequestError';
  constructor(message: string) {
    super(message, 'duplicate_request_id');
  }
}

// The addon reports refusals as "RoutingError[<code>]: <message>", with backpressure as
// "RoutingError[backpressure retryAfterMs=<n>]: <message>".
const NATIVE_REFUSAL = /^RoutingError\[([a-z_]+)(?: retryAfterMs=([0-9.]+))?\]: ([\s\S]*)$/;

/** Turns an addon refusal into its RoutingError class; anything else is returned unchanged. */
export function translateRoutingError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof TypeError) return err;
  const m = NATIVE_REFUSAL.exec(err.message);
  if (!m) return err;
  const [, code, retry, message] = m;
  switch (code) {
    case 'no_eligible_worker':
      return new NoEligibleWorkerError(message);
    case 'backpressure':
      return new BackpressureError(message, Number(retry ?? 1000));
    case 'missing_routing_hint':
      return new MissingRoutingHintError(message);
    case 'duplicate_request_id':
      return new DuplicateRequestError(message);
    default:
      return new RoutingError(message, code);
  }
}
