// Summaries of replay measurements.
import { percentile } from '../../util/percentile.js';

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
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    count: sorted.length,
  };
}
