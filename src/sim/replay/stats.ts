// Percentiles and summaries of replay measurements.

/** Linear-interpolated percentile (p in [0, 100]) of an ascending-sorted array. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = (p / 100) * (n - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export interface Distribution {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  count: number;
}

export function summarize(values: readonly number[]): Distribution {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    count: sorted.length,
  };
}
