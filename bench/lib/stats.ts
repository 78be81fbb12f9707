// Summary statistics for benchmark samples.
import { percentile } from '../../src/util/percentile.js';

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Sorted ascending copy. */
export function sorted(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort();
}

/** The repository's one percentile (linear interpolation, src/util/percentile.ts says why). */
export { percentile };

export function median(values: ArrayLike<number>): number {
  return percentile(sorted(values), 50);
}

export function mean(values: ArrayLike<number>): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum / values.length;
}

export function summarize(values: ArrayLike<number>): Summary {
  const s = sorted(values);
  return {
    n: s.length,
    min: s.length ? s[0] : Number.NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s.length ? s[s.length - 1] : Number.NaN,
    mean: mean(s),
  };
}

/** a / b, NaN when b is 0 or either is not finite. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}

/** Points of the empirical CDF of the values, thinned to at most `maxPoints` (for charts). */
export function cdfPoints(values: ArrayLike<number>, maxPoints = 200): Array<[number, number]> {
  const s = sorted(values);
  const n = s.length;
  if (n === 0) return [];
  const step = Math.max(1, Math.floor(n / maxPoints));
  const pts: Array<[number, number]> = [];
  for (let i = 0; i < n; i += step) pts.push([s[i], (i + 1) / n]);
  if (pts[pts.length - 1][1] !== 1) pts.push([s[n - 1], 1]);
  return pts;
}
