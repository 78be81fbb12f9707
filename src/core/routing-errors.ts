// Refusals of a routing decision, typed so that frontends can map them (503, 429 with
// Retry-After, 400, 409). Malformed arguments are TypeError/RangeError instead, never these.
import { NativeErrorCode, nativeErrorCode } from './errors.js';

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

/** The pool's queued prefill tokens would pass the configured cap (or its router queue is full); retry after `retryAfterMs`. */
export class BackpressureError extends RoutingError {
  override name = 'BackpressureError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
    code = 'backpressure',
  ) {
    super(message, code);
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

/**
 * Turns an addon refusal (by its code, native/src/bindings/errors.rs) into its RoutingError class;
 * anything else is returned unchanged. `retryAfterMs` reads the backpressure hint of the refusal.
 */
export function translateRoutingError(err: unknown, retryAfterMs: () => number): unknown {
  const message = err instanceof Error ? err.message : '';
  switch (nativeErrorCode(err)) {
    case NativeErrorCode.noEligibleWorker:
      return new NoEligibleWorkerError(message);
    case NativeErrorCode.backpressure:
      return new BackpressureError(message, retryAfterMs());
    case NativeErrorCode.missingRoutingHint:
      return new MissingRoutingHintError(message);
    case NativeErrorCode.duplicateRequest:
      return new DuplicateRequestError(message);
    default:
      return err;
  }
}
