import { describe, expect, it } from 'vitest';
import { rates, summarizeRounds } from '../../../bench/peers/rounds.js';

describe('figures from alternating rounds', () => {
  it('takes the median over rounds of each round percentile, pooled kept aside', () => {
    const calm = Array.from({ length: 101 }, (_, i) => 1 + i / 100); // p50 1.5, p99 1.99
    const stalled = [...calm.slice(0, 90), ...Array(11).fill(100)];
    const s = summarizeRounds([calm, stalled, calm]);
    expect(s.roundP99).toHaveLength(3);
    expect(s.p99).toBeCloseTo(1.99, 6); // the stalled round moves one round, not the figure
    expect(s.pooled.p99).toBe(100);
    expect(s.pooled.n).toBe(303);
    expect(s.p50).toBeCloseTo(1.5, 6);
  });

  it('ignores empty rounds and refuses no samples at all', () => {
    expect(summarizeRounds([[], [2, 4]]).p50).toBe(3);
    expect(() => summarizeRounds([[]])).toThrow(RangeError);
  });

  it('turns seconds per round into rates and their median', () => {
    expect(rates(100, [1, 2, 0.5])).toEqual({ median: 100, rounds: [100, 50, 200] });
  });
});
