import { describe, expect, it } from 'vitest';
import type { RoutingDecision } from '../../../src/core/routing-core.js';
import { DecisionLog } from '../../../src/server/observability/decision-log.js';

const decision = (requestId: string, worker: number): RoutingDecision => ({
  requestId,
  worker,
  dpRank: 0,
  overlapBlocks: 1,
  lowerTierBlocks: { host: 0, disk: 0, external: 0 },
  promptTokens: 32,
  cachedTokens: 16,
  prefillTokens: 16,
  policy: 'kv',
  candidates: [],
  timingsUs: { hash: 1, match: 1, select: 1, total: 3 },
});

describe('DecisionLog', () => {
  it('joins the legs and the end of each request, newest request first, earlier leg first', () => {
    const log = new DecisionLog(8);
    log.leg('prefill', decision('a', 1), 10);
    log.leg('prefill', decision('b', 2), 11);
    log.leg('decode', decision('a', 5), 12);
    log.done({ at: 13, requestId: 'a', mode: 'disaggregated', reason: 'unconditional', outcome: 'end', ttftMs: 4, outputTokens: 3 });
    const recent = log.recent(10);
    expect(recent.map((r) => r.requestId)).toEqual(['a', 'b']);
    expect(recent[0].legs.map((l) => `${l.pool}:${l.decision.worker}`)).toEqual(['prefill:1', 'decode:5']);
    expect(recent[0].done?.mode).toBe('disaggregated');
    expect(recent[1].done).toBeUndefined();
    expect(log.recent(1).map((r) => r.requestId)).toEqual(['a']);
  });

  it('keeps only the last `capacity` legs', () => {
    const log = new DecisionLog(3);
    for (let i = 0; i < 10; i++) log.leg('decode', decision(`r${i}`, i));
    expect(log.recent(100).map((r) => r.requestId)).toEqual(['r9', 'r8', 'r7']);
  });

  it('refuses a capacity that is not a small positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 1e6]) expect(() => new DecisionLog(bad)).toThrow(RangeError);
  });
});
