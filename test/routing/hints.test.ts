import { describe, expect, it } from 'vitest';
import { InvalidRoutingHintError, parseRoutingHints } from '../../src/routing/hints.js';

describe('parseRoutingHints', () => {
  it('reads the four headers, any case, from a record or a Headers object', () => {
    const h = { 'x-worker-instance-id': '12', 'X-Prefill-Instance-Id': '7', 'x-dp-rank': ' 3 ', 'x-prefill-dp-rank': '0' };
    expect(parseRoutingHints(h)).toEqual({ workerId: 12, prefillWorkerId: 7, dpRank: 3, prefillDpRank: 0 });
    expect(parseRoutingHints(new Headers({ 'x-worker-instance-id': '9007199254740991' }))).toEqual({ workerId: Number.MAX_SAFE_INTEGER });
    expect(parseRoutingHints({})).toEqual({});
    expect(parseRoutingHints(undefined)).toEqual({});
    expect(parseRoutingHints({ 'x-dp-rank': '' })).toEqual({});
  });

  it('matches names case-insensitively as before: the exact-case entry first, else the first name that lower-cases to it', () => {
    expect(parseRoutingHints({ 'X-DP-RANK': '1', 'x-dp-rank': '2' })).toEqual({ dpRank: 2 });
    expect(parseRoutingHints({ 'X-DP-RANK': '1', 'X-Dp-Rank': '2' })).toEqual({ dpRank: 1 });
    expect(parseRoutingHints({ 'x-dp-rank': undefined, 'X-Dp-Rank': '5' })).toEqual({});
    expect(parseRoutingHints({ 'X-Dp-Rank': '5', 'x-dp-rank': undefined })).toEqual({ dpRank: 5 });
    // Names of Object.prototype are not headers; a non-ASCII name folds as toLowerCase() does.
    expect(parseRoutingHints({ 'x-dp-rank': '4' }, undefined, { sessionHeader: 'constructor' })).toEqual({ dpRank: 4 });
    expect(parseRoutingHints({ 'X-SESSİON': 'a' }, undefined, { sessionHeader: 'x-sessi̇on' })).toEqual({ sessionId: 'a' });
  });

  it('reads nvext hints with their Dynamo aliases, numbers or digit strings', () => {
    expect(parseRoutingHints({}, { backend_instance_id: 4, prefill_worker_id: '5', dp_rank: 1, prefill_dp_rank: 2 })).toEqual({
      workerId: 4,
      prefillWorkerId: 5,
      dpRank: 1,
      prefillDpRank: 2,
    });
    expect(parseRoutingHints({}, { decode_worker_id: 8 })).toEqual({ workerId: 8 });
    expect(parseRoutingHints({}, { worker_id: 3, other: 'x' })).toEqual({ workerId: 3 });
    expect(parseRoutingHints({}, null)).toEqual({});
  });

  it('accepts the same hint both ways and refuses a disagreement', () => {
    expect(parseRoutingHints({ 'x-worker-instance-id': '4' }, { backend_instance_id: 4 })).toEqual({ workerId: 4 });
    expect(() => parseRoutingHints({ 'x-worker-instance-id': '4' }, { backend_instance_id: 5 })).toThrow(
      /x-worker-instance-id \(4\) disagrees with nvext.backend_instance_id \(5\)/,
    );
  });

  it('reads the session id header only when session affinity names one', () => {
    const h = { 'X-Session-Id': ' conv-42 ', 'x-worker-instance-id': '3' };
    expect(parseRoutingHints(h)).toEqual({ workerId: 3 });
    expect(parseRoutingHints(h, undefined, { sessionHeader: 'x-session-id' })).toEqual({ workerId: 3, sessionId: 'conv-42' });
    expect(parseRoutingHints({ 'x-session-id': '' }, undefined, { sessionHeader: 'x-session-id' })).toEqual({});
    expect(() => parseRoutingHints({ 'x-session-id': 'a b' }, undefined, { sessionHeader: 'x-session-id' })).toThrow(InvalidRoutingHintError);
    expect(() => parseRoutingHints({ 'x-session-id': 'x'.repeat(257) }, undefined, { sessionHeader: 'x-session-id' })).toThrow(/1 to 256 visible ASCII/);
    expect(() => parseRoutingHints({ 'x-session-id': ['a', 'b'] }, undefined, { sessionHeader: 'x-session-id' })).toThrow(/sent 2 times/);
  });

  it('refuses malformed values with a clear RangeError naming the hint', () => {
    const bad: Array<[Record<string, string | string[]>, RegExp]> = [
      [{ 'x-worker-instance-id': 'abc' }, /x-worker-instance-id must be an integer in \[0, 9007199254740991\], got 'abc'/],
      [{ 'x-worker-instance-id': '-1' }, /x-worker-instance-id/],
      [{ 'x-worker-instance-id': '1.5' }, /x-worker-instance-id/],
      [{ 'x-worker-instance-id': '9007199254740992' }, /x-worker-instance-id/],
      [{ 'x-dp-rank': '65536' }, /x-dp-rank must be an integer in \[0, 65535\]/],
      [{ 'x-prefill-dp-rank': '1e3' }, /x-prefill-dp-rank/],
      [{ 'x-prefill-instance-id': ['1', '2'] }, /sent 2 times with different values/],
    ];
    for (const [h, re] of bad) {
      expect(() => parseRoutingHints(h)).toThrow(re);
      expect(() => parseRoutingHints(h)).toThrow(InvalidRoutingHintError);
      expect(() => parseRoutingHints(h)).toThrow(RangeError);
    }
    expect(parseRoutingHints({ 'x-prefill-instance-id': ['2', '2'] })).toEqual({ prefillWorkerId: 2 });
  });

  it('refuses a malformed nvext', () => {
    expect(() => parseRoutingHints({}, 'x')).toThrow(/'nvext' must be an object, got string/);
    expect(() => parseRoutingHints({}, [1])).toThrow(/got an array/);
    expect(() => parseRoutingHints({}, { dp_rank: -1 })).toThrow(/nvext.dp_rank must be an integer in \[0, 65535\], got -1/);
    expect(() => parseRoutingHints({}, { prefill_worker_id: 1.5 })).toThrow(/nvext.prefill_worker_id/);
    expect(() => parseRoutingHints({}, { worker_id: true })).toThrow(/got true/);
    expect(() => parseRoutingHints({}, { dp_rank: 'x' })).toThrow(expect.objectContaining({ code: 'invalid_routing_hint', name: 'InvalidRoutingHintError' }));
  });
});
