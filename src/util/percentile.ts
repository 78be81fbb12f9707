// The one percentile of the repository (benchmarks, replay reports): linear interpolation between
// the two closest ranks, rank = p/100 x (n - 1) (Hyndman and Fan's type 7, the default of numpy
// and of spreadsheets' PERCENTILE.INC). Chosen over nearest rank because it moves continuously
// with the samples and with p, so a figure does not jump by a whole sample gap when one sample
// more or less is taken, and because other tools compute the same number from the same samples.

/** The p-th percentile (p in [0, 100], clamped) of ascending-sorted values; NaN for none. */
export function percentile(sortedValues: ArrayLike<number>, p: number): number {
  const n = sortedValues.length;
  if (n === 0) return Number.NaN;
  if (p <= 0) return sortedValues[0];
  if (p >= 100) return sortedValues[n - 1];
  const rank = (p / 100) * (n - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  return sortedValues[lo] + (sortedValues[hi] - sortedValues[lo]) * (rank - lo);
}
