// Errors of the routing orchestration. Refusals the client caused are RangeErrors (frontends
// answer 400); refusals of the fleet's state are RoutingErrors with a code (frontends answer 503).
import { RoutingError } from '../core/routing-errors.js';

/** A malformed routing hint (a header or an `nvext` field): the client's mistake. */
export class InvalidRoutingHintError extends RangeError {
  override name = 'InvalidRoutingHintError';
  readonly code = 'invalid_routing_hint';
}

/** A routing hint names a worker the pool does not have. */
export class UnknownWorkerHintError extends RangeError {
  override name = 'UnknownWorkerHintError';
  readonly code = 'unknown_worker';
}

/** Disaggregation is enforced and no prefill worker can serve. */
export class DisaggregationRequiredError extends RoutingError {
  override name = 'DisaggregationRequiredError';
  constructor(message = 'disaggregated serving is enforced and no prefill worker is available') {
    super(message, 'disaggregation_required');
  }
}

/** The chosen prefill worker cannot run the handoff (e.g. an SGLang worker without a bootstrap address). */
export class PrefillUnusableError extends Error {
  override name = 'PrefillUnusableError';
  readonly code = 'prefill_unusable';
}
