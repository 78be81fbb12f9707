import { describe, expect, it } from 'vitest';
import type { MetricsTotals } from '../../../src/server/observability/metrics.js';
import { bucketQuantile, MetricsHistory } from '../../../src/server/observability/metrics-history.js';

const BOUNDS = [0.1, 0.2, 0.5, 1];

describe('bucketQuantile', () => {
  it('interpolates inside the bucket as histogram_quantile does', () => {
    // 10 in (0, 0.1], 10 in (0.1, 0.2]: the median is the first bucket's top, p75 halfway through the second.
    expect(bucketQuantile(BOUNDS, [10, 10, 0, 0], 20, 0.5)).toBeCloseTo(0.1);
    expect(bucketQuantile(BOUNDS, [10, 10, 0, 0], 20, 0.75)).toBeCloseTo(0.15);
    // Above the last bound: the last bound.
    expect(bucketQuantile(BOUNDS, [0, 0, 0, 1], 10, 0.99)).toBe(1);
    expect(bucketQuantile(BOUNDS, [0, 0, 0, 0], 0, 0.5)).toBeNaN();
  });
});

describe('MetricsHistory', () => {
  it('turns each interval of the totals into rates, a mean hit rate and TTFT percentiles', () => {
    let now = 1_000_000;
    const totals: MetricsTotals = {
      ttftBounds: BOUNDS,
      ttftBuckets: new Float64Array(4),
      ttftCount: 0,
      hitRate: {},
      requests: 0,
      errors: 0,
      served: {},
      reasons: {},
    };
    const snapshot = (): MetricsTotals => ({
      ...totals,
      ttftBuckets: Float64Array.from(totals.ttftBuckets),
      hitRate: { ...totals.hitRate },
      served: { ...totals.served },
      reasons: { ...totals.reasons },
    });
    const h = new MetricsHistory(snapshot, 5_000, 3, () => now);
    h.sample();
    now += 5_000;
    totals.requests = 10;
    totals.errors = 1;
    totals.ttftBuckets[0] = 10;
    totals.ttftCount = 10;
    totals.hitRate = { decode: { sum: 4, count: 8 } };
    totals.served = { aggregated: 10 };
    totals.reasons = { no_prefill_workers: 10 };
    h.sample();
    now += 2_500; // the running interval: nothing new
    const points = h.series();
    expect(points).toHaveLength(2);
    expect(points[0]).toMatchObject({
      seconds: 5,
      requests_per_s: 2,
      errors_per_s: 0.2,
      hit_rate: 0.5,
      served: { aggregated: 10 },
      reasons: { no_prefill_workers: 10 },
    });
    expect(points[0].ttft_ms!.p50).toBeCloseTo(50);
    expect(points[1]).toMatchObject({ seconds: 2.5, requests_per_s: 0, hit_rate: null, ttft_ms: null, served: {} });
    // Only the last `points` intervals are kept.
    for (let i = 0; i < 5; i++) {
      now += 5_000;
      h.sample();
    }
    expect(h.series()).toHaveLength(3);
  });

  it('refuses intervals and sizes out of range', () => {
    const read = (): MetricsTotals => ({
      ttftBounds: BOUNDS,
      ttftBuckets: new Float64Array(4),
      ttftCount: 0,
      hitRate: {},
      requests: 0,
      errors: 0,
      served: {},
      reasons: {},
    });
    expect(() => new MetricsHistory(read, 0)).toThrow(RangeError);
    expect(() => new MetricsHistory(read, 5_000, 0)).toThrow(RangeError);
    expect(() => new MetricsHistory(read, 5_000, 1.5)).toThrow(RangeError);
  });
});
