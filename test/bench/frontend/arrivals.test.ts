import { describe, expect, it } from 'vitest';
import { arrivalOffsetsMs } from '../../../bench/frontend/arrivals.js';

describe('arrivalOffsetsMs', () => {
  it('spaces uniform arrivals evenly at the rate', () => {
    expect([...arrivalOffsetsMs(4, 1000, 'uniform')]).toEqual([0, 1, 2, 3]);
    expect([...arrivalOffsetsMs(3, 250, 'uniform')]).toEqual([0, 4, 8]);
  });

  it('gives Poisson arrivals the mean rate, bursts and long gaps, the same for the same seed', () => {
    const a = arrivalOffsetsMs(20_000, 1000, 'poisson', 7);
    const gaps = a.slice(1).map((t, i) => t - a[i]);
    const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
    expect(mean).toBeGreaterThan(0.97);
    expect(mean).toBeLessThan(1.03);
    // Exponential gaps: about 10% are under a tenth of the mean, about 5% over three times it.
    const short = gaps.filter((g) => g < 0.1).length / gaps.length;
    const long = gaps.filter((g) => g > 3).length / gaps.length;
    expect(short).toBeGreaterThan(0.08);
    expect(short).toBeLessThan(0.12);
    expect(long).toBeGreaterThan(0.035);
    expect(long).toBeLessThan(0.065);
    expect(gaps.every((g) => g >= 0)).toBe(true);
    expect(arrivalOffsetsMs(20_000, 1000, 'poisson', 7)).toEqual(a);
    expect(arrivalOffsetsMs(20_000, 1000, 'poisson', 8)).not.toEqual(a);
  });

  it('refuses a bad count or rate', () => {
    expect(() => arrivalOffsetsMs(-1, 1000, 'uniform')).toThrow(RangeError);
    expect(() => arrivalOffsetsMs(10, 0, 'uniform')).toThrow(RangeError);
    expect(() => arrivalOffsetsMs(10, Number.NaN, 'poisson')).toThrow(RangeError);
  });
});
