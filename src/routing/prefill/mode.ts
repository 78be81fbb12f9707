// How one request is served, decided per request before anything is booked: aggregated on a
// decode worker, or disaggregated (a prefill worker computes the prompt and hands its KV over).
// Without a selectable prefill worker it is aggregated (or refused, when disaggregation is
// enforced). With one, it is disaggregated unless conditional disaggregation (Dynamo's
// conditional_prefill, llm-d's threshold) finds that the remote prefill does not pay:
//
//   uncached tokens on the decode worker >= disaggAboveTokens  -> disaggregated (above_cap: a long
//                                                                  prompt would stall that worker's decodes)
//   uncached tokens on the decode worker <  bypassBelowTokens  -> aggregated (below_threshold: the
//                                                                  transfer costs more than the compute)
//   queueAware, and the prefill worker's queue plus the prompt's work there exceed the decode
//   worker's own queue plus its work                           -> aggregated (prefill_queue_longer)
//   otherwise                                                  -> disaggregated (remote_prefill_pays)
//
// A client that pins the prefill worker asked for disaggregation (prefill_pinned). SGLang decode
// workers cannot compute a prompt (they wait for a bootstrap room): with them, no condition applies. Work is counted
// in uncached prompt tokens: both pools run the same engines, so tokens compare like time.
import { describe, expectInteger } from '../../util/validate.js';
import { copyFields } from '../../util/objects.js';
import { DisaggregationRequiredError } from '../errors.js';

export type Mode = 'aggregated' | 'disaggregated';

export const MODE_REASONS = [
  'no_prefill_workers',
  'unconditional',
  'prefill_pinned',
  'above_cap',
  'below_threshold',
  'prefill_queue_longer',
  'remote_prefill_pays',
  'prefill_failed',
] as const;
/** Why a request was served as it was (x-kvroute-mode-reason). `prefill_failed`: a fallback. */
export type ModeReason = (typeof MODE_REASONS)[number];

export interface ModeDecision {
  mode: Mode;
  reason: ModeReason;
}

export interface ConditionalDisaggSettings {
  /** Decide per request (off: every request is disaggregated while a prefill worker is selectable). */
  enabled: boolean;
  /** Serve aggregated below this many uncached tokens on the decode worker. */
  bypassBelowTokens: number;
  /** Always disaggregate from this many uncached tokens on the decode worker. */
  disaggAboveTokens: number;
  /** Serve aggregated when the prefill pool's queue would take longer than the local prefill. */
  queueAware: boolean;
}

export const DEFAULT_CONDITIONAL_DISAGG: Readonly<ConditionalDisaggSettings> = Object.freeze({
  enabled: false,
  bypassBelowTokens: 5000,
  disaggAboveTokens: 16_384,
  queueAware: true,
});

/** The work each side would do, in uncached prompt tokens. */
export interface ModeEstimate {
  /** Uncached prompt tokens on the decode worker routing would choose (its cache counts when it computes the prompt). */
  localUncached: number;
  /** Prefill tokens already booked on that decode worker. */
  localQueued: number;
  /** Uncached prompt tokens on the prefill worker routing would choose. */
  remoteUncached: number;
  /** Prefill tokens ahead of the request there: booked on that worker, plus its share of the prefill pool's router queue. */
  remoteQueued: number;
}

export interface ModeInputs {
  /** At least one prefill worker is selectable. */
  prefillAvailable: boolean;
  /** Refuse rather than serve aggregated. */
  enforceDisagg: boolean;
  conditional: Readonly<ConditionalDisaggSettings>;
  /** The client (or its session) pinned the prefill worker. */
  prefillPinned: boolean;
  /**
   * Every selectable decode worker can compute a prompt itself. An SGLang decode worker cannot:
   * it serves only requests that bring a bootstrap room (Dynamo's SGLang conditional
   * disaggregation is still work in progress), so with one in the pool every request is disaggregated.
   * Asked only with conditional disaggregation on (it walks the decode pool).
   */
  decodeComputesPrompts(): boolean;
  /** The two sides' work, asked only when the rules need it (queries that book nothing). */
  estimate(): ModeEstimate;
}

/** The mode of a request and why; DisaggregationRequiredError when it may be served in none. */
export function chooseMode(inputs: ModeInputs): ModeDecision {
  if (!inputs.prefillAvailable) {
    if (inputs.enforceDisagg) throw new DisaggregationRequiredError();
    return { mode: 'aggregated', reason: 'no_prefill_workers' };
  }
  const c = inputs.conditional;
  if (!c.enabled || inputs.enforceDisagg || !inputs.decodeComputesPrompts()) return { mode: 'disaggregated', reason: 'unconditional' };
  if (inputs.prefillPinned) return { mode: 'disaggregated', reason: 'prefill_pinned' };
  const e = inputs.estimate();
  if (e.localUncached >= c.disaggAboveTokens) return { mode: 'disaggregated', reason: 'above_cap' };
  if (e.localUncached < c.bypassBelowTokens) return { mode: 'aggregated', reason: 'below_threshold' };
  if (c.queueAware && e.remoteQueued + e.remoteUncached > e.localQueued + e.localUncached) return { mode: 'aggregated', reason: 'prefill_queue_longer' };
  return { mode: 'disaggregated', reason: 'remote_prefill_pays' };
}

/** `base` with the fields of `over` that are set, checked whole (TypeError/RangeError naming the field). */
export function conditionalSettings(base: Readonly<ConditionalDisaggSettings>, over: Partial<ConditionalDisaggSettings> = {}): ConditionalDisaggSettings {
  if (over === null || typeof over !== 'object') throw new TypeError(`conditional disaggregation settings must be an object, got ${describe(over)}`);
  const s = copyFields(base) as ConditionalDisaggSettings;
  for (const [k, v] of Object.entries(over)) if (v !== undefined) (s as unknown as Record<string, unknown>)[k] = v;
  for (const k of ['enabled', 'queueAware'] as const) {
    if (typeof s[k] !== 'boolean') throw new TypeError(`conditional disaggregation ${k} must be a boolean, got ${describe(s[k])}`);
  }
  expectInteger(s.bypassBelowTokens, 'conditional disaggregation bypassBelowTokens', 0, Number.MAX_SAFE_INTEGER);
  expectInteger(s.disaggAboveTokens, 'conditional disaggregation disaggAboveTokens', 1, Number.MAX_SAFE_INTEGER);
  return { enabled: s.enabled, bypassBelowTokens: s.bypassBelowTokens, disaggAboveTokens: s.disaggAboveTokens, queueAware: s.queueAware };
}
