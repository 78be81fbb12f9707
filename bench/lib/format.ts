// Number formatting shared by the report and the charts.

/** Three significant digits, with k/M/G suffixes from 10,000 up: 0.0123, 4.56, 789, 12.3k, 4.5M. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? 'n/a' : v > 0 ? '∞' : '-∞';
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9)}G`;
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  return trim(v);
}

/** Axis ticks: k/M/G from 1,000 up (1k, 10k, 1M). */
export function formatCompact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9)}G`;
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e3) return `${trim(v / 1e3)}k`;
  return trim(v);
}

/** Plain digits with thousands separators for counts: 1,048,576. */
export function formatCount(v: number): string {
  return Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : formatNumber(v);
}

function trim(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(a)));
  return Number(v.toFixed(digits)).toString();
}

/** "12.3 us", "5.67 GB/s" */
export function formatValue(v: number, unit: string): string {
  return unit ? `${formatNumber(v)} ${unit}` : formatNumber(v);
}
