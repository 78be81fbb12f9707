import { describe, expect, it } from 'vitest';
import { DisaggregationRequiredError } from '../../../src/routing/errors.js';
import { chooseMode, conditionalSettings, DEFAULT_CONDITIONAL_DISAGG, type ModeEstimate, type ModeInputs } from '../../../src/routing/prefill/mode.js';

const on = conditionalSettings(DEFAULT_CONDITIONAL_DISAGG, { enabled: true, bypassBelowTokens: 1000, disaggAboveTokens: 10_000, queueAware: true });

function inputs(e: Partial<ModeEstimate>, o: Partial<ModeInputs> = {}): ModeInputs {
  return {
    prefillAvailable: true,
    enforceDisagg: false,
    conditional: on,
    prefillPinned: false,
    decodeComputesPrompts: () => true,
    // The prefill side holds as much of the prompt as the decode side unless told otherwise.
    estimate: () => ({ localUncached: 2000, localQueued: 0, remoteUncached: e.localUncached ?? 2000, remoteQueued: 0, ...e }),
    ...o,
  };
}

describe('chooseMode', () => {
  it('without prefill workers: aggregated, or refused under enforceDisagg', () => {
    expect(chooseMode(inputs({}, { prefillAvailable: false }))).toEqual({ mode: 'aggregated', reason: 'no_prefill_workers' });
    expect(() => chooseMode(inputs({}, { prefillAvailable: false, enforceDisagg: true }))).toThrow(DisaggregationRequiredError);
  });

  it('with conditional disaggregation off (the default), or enforced disaggregation: always disaggregated, no estimate asked', () => {
    const never = () => {
      throw new Error('asked');
    };
    expect(chooseMode(inputs({}, { conditional: DEFAULT_CONDITIONAL_DISAGG, estimate: never }))).toEqual({ mode: 'disaggregated', reason: 'unconditional' });
    expect(chooseMode(inputs({}, { enforceDisagg: true, estimate: never }))).toEqual({ mode: 'disaggregated', reason: 'unconditional' });
    expect(chooseMode(inputs({}, { prefillPinned: true, estimate: never }))).toEqual({ mode: 'disaggregated', reason: 'prefill_pinned' });
    // SGLang decode workers wait for a bootstrap room: they cannot serve a request aggregated.
    expect(chooseMode(inputs({}, { decodeComputesPrompts: () => false, estimate: never }))).toEqual({ mode: 'disaggregated', reason: 'unconditional' });
  });

  it('applies the cap first, then the threshold, then the queues', () => {
    expect(chooseMode(inputs({ localUncached: 10_000 }))).toMatchObject({ mode: 'disaggregated', reason: 'above_cap' });
    // Above the cap even with a long prefill queue.
    expect(chooseMode(inputs({ localUncached: 20_000, remoteQueued: 1e9 }))).toMatchObject({ reason: 'above_cap' });
    expect(chooseMode(inputs({ localUncached: 999 }))).toEqual({ mode: 'aggregated', reason: 'below_threshold' });
    expect(chooseMode(inputs({ localUncached: 1000 }))).toEqual({ mode: 'disaggregated', reason: 'remote_prefill_pays' });
    // The prefill worker's queue and the work there against the decode worker's.
    expect(chooseMode(inputs({ localQueued: 500, remoteQueued: 600 }))).toEqual({ mode: 'aggregated', reason: 'prefill_queue_longer' });
    expect(chooseMode(inputs({ localQueued: 500, remoteQueued: 500 }))).toEqual({ mode: 'disaggregated', reason: 'remote_prefill_pays' });
    // A better cache on the prefill side makes the remote side cheaper.
    expect(chooseMode(inputs({ localQueued: 0, remoteQueued: 1500, remoteUncached: 100 }))).toMatchObject({ reason: 'remote_prefill_pays' });
    expect(chooseMode(inputs({ localQueued: 0, remoteQueued: 1500 }, { conditional: { ...on, queueAware: false } }))).toMatchObject({
      reason: 'remote_prefill_pays',
    });
  });

  it('checks settings whole, keeping what is not given', () => {
    expect(conditionalSettings(on, { bypassBelowTokens: 7 })).toEqual({ ...on, bypassBelowTokens: 7 });
    expect(() => conditionalSettings(on, { enabled: 'yes' as never })).toThrow(TypeError);
    expect(() => conditionalSettings(on, { disaggAboveTokens: 0 })).toThrow(RangeError);
    expect(() => conditionalSettings(on, { bypassBelowTokens: 1.5 })).toThrow(RangeError);
    expect(() => conditionalSettings(on, null as never)).toThrow(TypeError);
  });
});
