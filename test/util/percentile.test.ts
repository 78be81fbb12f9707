import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile } from '../../src/util/percentile.js';

describe('percentile', () => {
  it('interpolates linearly between the two closest ranks', () => {
    const s = [10, 20, 30, 40];
    expect(percentile(s, 0)).toBe(10);
    expect(percentile(s, 50)).toBe(25);
    expect(percentile(s, 100)).toBe(40);
    expect(percentile(s, 90)).toBeCloseTo(37);
    expect(percentile([1, 2, 3, 4, 5], 50)).toBe(3);
    expect(percentile([0, 10], 90)).toBe(9);
    expect(percentile(Float64Array.of(7), 99)).toBe(7);
  });

  it('is NaN for no values and clamps p to [0, 100]', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(percentile([1, 2], -5)).toBe(1);
    expect(percentile([1, 2], 250)).toBe(2);
  });

  it('stays between the two samples around rank p/100 x (n - 1) and grows with p', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 0, max: 100, noNaN: true }),
        (xs, p) => {
          const s = Float64Array.from(xs).sort();
          const v = percentile(s, p);
          // Between the two samples around its rank, and monotone in p.
          const rank = (p / 100) * (s.length - 1);
          expect(v).toBeGreaterThanOrEqual(s[Math.floor(rank)] - 1e-9);
          expect(v).toBeLessThanOrEqual(s[Math.ceil(rank)] + 1e-9);
          expect(percentile(s, Math.min(100, p + 1))).toBeGreaterThanOrEqual(v - 1e-9);
        },
      ),
    );
  });
});
