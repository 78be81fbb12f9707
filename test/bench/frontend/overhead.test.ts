import { describe, expect, it } from 'vitest';
import { overheadFromRounds, type RoundLatencies } from '../../../bench/frontend/overhead.js';

/** 100 latencies: `base` ms, but `tail` ms for the slowest `slow` (2 by default, so p99 = tail). */
function latencies(base: number, tail: number, slow = 2): Float64Array {
  const a = new Float64Array(100).fill(base);
  a.fill(tail, 100 - slow);
  return a.sort();
}

describe('overheadFromRounds', () => {
  it('takes routed minus direct per round and reports the median of the rounds', () => {
    const rounds: RoundLatencies[] = [
      { direct: latencies(0.2, 0.5), routed: latencies(0.7, 1.3) }, // +0.5 / +0.8
      { direct: latencies(0.2, 0.5), routed: latencies(0.8, 1.5) }, // +0.6 / +1.0
      { direct: latencies(0.2, 0.5), routed: latencies(0.7, 9.5, 5) }, // +0.5 / +9.0: a stall in one run
    ];
    const r = overheadFromRounds(rounds);
    expect(r.rounds).toBe(3);
    expect(r.round_overhead_p50_ms).toEqual([0.5, 0.6, 0.5]);
    expect(r.round_overhead_p99_ms).toEqual([0.8, 1, 9]);
    expect(r.overhead_p50_ms).toBe(0.5);
    expect(r.overhead_p99_ms).toBe(1);
    // Pooled, the stalled run's slowest requests set the p99 of all 300.
    expect(r.routed_p99_ms).toBe(9.5);
    expect(r.direct_p99_ms).toBe(0.5);
    expect(r.pooled_overhead_p99_ms).toBe(9);
  });

  it('refuses no rounds and rounds without latencies', () => {
    expect(() => overheadFromRounds([])).toThrow(RangeError);
    expect(() => overheadFromRounds([{ direct: new Float64Array(0), routed: latencies(1, 2) }])).toThrow(RangeError);
  });
});
