// How one request is served, decided per request before anything is booked: the seam for serving
// choices. Today a request is served disaggregated whenever a prefill worker is selectable, else
// aggregated (or refused, when disaggregation is enforced). A choice that weighs the request
// itself (aggregated when a remote prefill does not pay: a short prompt, a warm decode cache) is
// made here too, from the request and the pools' state; PrefillRouter.handle and query follow it.
import { DisaggregationRequiredError } from '../errors.js';

export type Mode = 'aggregated' | 'disaggregated';

export interface ModeInputs {
  /** At least one prefill worker is selectable. */
  prefillAvailable: boolean;
  /** Refuse rather than serve aggregated. */
  enforceDisagg: boolean;
}

/** The mode of a request; DisaggregationRequiredError when it may be served in none. */
export function chooseMode(inputs: ModeInputs): Mode {
  if (inputs.prefillAvailable) return 'disaggregated';
  if (inputs.enforceDisagg) throw new DisaggregationRequiredError();
  return 'aggregated';
}
