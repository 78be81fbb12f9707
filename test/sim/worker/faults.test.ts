import { describe, expect, it } from 'vitest';
import { OpenAiError } from '../../../src/sim/worker/errors.js';
import { FaultState, parseFaultCommand } from '../../../src/sim/worker/faults.js';

describe('FaultState', () => {
  it('fails exactly the next n requests', () => {
    const f = new FaultState();
    f.failNext(2);
    expect([f.takeFailure(), f.takeFailure(), f.takeFailure()]).toEqual([true, true, false]);
    expect(f.injectedFailures).toBe(2);
    expect(f.pendingFailures).toBe(0);
  });

  it('refuses bad counts and slow factors', () => {
    const f = new FaultState();
    expect(() => f.failNext(-1)).toThrow(RangeError);
    expect(() => f.failNext(1.5)).toThrow(RangeError);
    expect(() => f.setSlow(0)).toThrow(RangeError);
    expect(() => f.setSlow(Number.NaN)).toThrow(RangeError);
    f.setSlow(3);
    expect(f.slowFactor).toBe(3);
  });
});

describe('parseFaultCommand', () => {
  it('accepts every documented switch', () => {
    expect(parseFaultCommand({ fail_next: 2, hang: true, slow: 4, drop_events: 1, restart: true })).toEqual({
      fail_next: 2,
      hang: true,
      slow: 4,
      drop_events: 1,
      restart: true,
    });
    expect(parseFaultCommand({})).toEqual({});
  });

  it('refuses unknown switches and bad values as 400s', () => {
    for (const bad of [{ explode: true }, { fail_next: -1 }, { fail_next: 'x' }, { hang: 1 }, { slow: 0 }, { slow: 'fast' }, { drop_events: 0.5 }, { restart: 'now' }]) {
      let err: unknown;
      try {
        parseFaultCommand(bad);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(bad)).toBeInstanceOf(OpenAiError);
      expect((err as OpenAiError).status).toBe(400);
    }
  });
});
