import { describe, expect, it } from 'vitest';
import { cdfPoints, median, percentile, ratio, sorted, summarize } from '../../../bench/lib/stats.js';
import { percentile as utilPercentile } from '../../../src/util/percentile.js';

describe('stats', () => {
  it('sorts, and takes the median with the repository percentile', () => {
    const s = sorted([40, 10, 30, 20]);
    expect(Array.from(s)).toEqual([10, 20, 30, 40]);
    expect(percentile).toBe(utilPercentile);
    expect(median([5, 1, 3])).toBe(3);
    expect(median([40, 10, 30, 20])).toBe(25);
  });

  it('summarises samples', () => {
    const xs = Array.from({ length: 101 }, (_, i) => 100 - i);
    expect(summarize(xs)).toEqual({ n: 101, min: 0, p50: 50, p90: 90, p99: 99, max: 100, mean: 50 });
    expect(summarize([]).n).toBe(0);
  });

  it('divides safely', () => {
    expect(ratio(6, 3)).toBe(2);
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(Number.NaN, 1)).toBeNaN();
  });

  it('thins the empirical CDF and always ends at 1', () => {
    const pts = cdfPoints(
      Array.from({ length: 1000 }, (_, i) => i),
      100,
    );
    expect(pts.length).toBeLessThanOrEqual(101);
    expect(pts[0]).toEqual([0, 0.001]);
    expect(pts[pts.length - 1]).toEqual([999, 1]);
    for (let i = 1; i < pts.length; i++) expect(pts[i][0]).toBeGreaterThanOrEqual(pts[i - 1][0]);
    expect(cdfPoints([])).toEqual([]);
  });
});
