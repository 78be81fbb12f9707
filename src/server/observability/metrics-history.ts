// The last minutes of the request path for the live page (/dashboard): the router's cumulative
// totals (RouterMetrics.totals) sampled on a timer into a fixed ring, each interval's change
// turned into rates, a mean hit rate and TTFT percentiles. Nothing runs per request.
import type { MetricsTotals } from './metrics.js';

export interface HistoryPoint {
  /** End of the interval, ms since the epoch. */
  at: number;
  seconds: number;
  requests_per_s: number;
  errors_per_s: number;
  /** Mean predicted hit rate of the interval's decisions, every pool together (null: none). */
  hit_rate: number | null;
  /** TTFT percentiles of the interval, ms (null: no streamed first token). */
  ttft_ms: { p50: number; p90: number; p99: number } | null;
  /** Requests served per mode and decisions per reason, in the interval. */
  served: Record<string, number>;
  reasons: Record<string, number>;
}

interface Sample {
  at: number;
  totals: MetricsTotals;
}

export class MetricsHistory {
  private readonly samples: Array<Sample | undefined>;
  private written = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly read: () => MetricsTotals,
    readonly intervalMs = 5_000,
    /** Points kept (60 at 5 s: the last 5 minutes). */
    readonly points = 60,
    private readonly clock: () => number = Date.now,
  ) {
    if (!Number.isInteger(intervalMs) || intervalMs < 10) throw new RangeError(`intervalMs must be an integer of at least 10, got ${intervalMs}`);
    if (!Number.isInteger(points) || points < 1 || points > 10_000) throw new RangeError(`points must be an integer from 1 to 10000, got ${points}`);
    this.samples = new Array<Sample | undefined>(points + 1);
  }

  /** Samples now and then every intervalMs (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  sample(): void {
    this.samples[this.written % this.samples.length] = { at: this.clock(), totals: this.read() };
    this.written++;
  }

  /** One point per interval, oldest first; the last one runs from the latest sample to now. */
  series(): HistoryPoint[] {
    const n = Math.min(this.written, this.samples.length);
    const kept: Sample[] = [];
    for (let i = n - 1; i >= 0; i--) kept.push(this.samples[(this.written - 1 - i) % this.samples.length]!);
    const now = { at: this.clock(), totals: this.read() };
    if (kept.length === 0 || now.at > kept[kept.length - 1].at) kept.push(now);
    const out: HistoryPoint[] = [];
    for (let i = 1; i < kept.length; i++) out.push(point(kept[i - 1], kept[i]));
    return out.slice(-this.points);
  }
}

function point(a: Sample, b: Sample): HistoryPoint {
  const seconds = Math.max(1e-3, (b.at - a.at) / 1000);
  let hitSum = 0;
  let hitCount = 0;
  for (const [pool, h] of Object.entries(b.totals.hitRate)) {
    hitSum += h.sum - (a.totals.hitRate[pool]?.sum ?? 0);
    hitCount += h.count - (a.totals.hitRate[pool]?.count ?? 0);
  }
  const buckets = b.totals.ttftBuckets.map((c, i) => c - a.totals.ttftBuckets[i]);
  const ttftCount = b.totals.ttftCount - a.totals.ttftCount;
  const q = (phi: number) => bucketQuantile(b.totals.ttftBounds, buckets, ttftCount, phi) * 1000;
  return {
    at: b.at,
    seconds,
    requests_per_s: (b.totals.requests - a.totals.requests) / seconds,
    errors_per_s: (b.totals.errors - a.totals.errors) / seconds,
    hit_rate: hitCount > 0 ? hitSum / hitCount : null,
    ttft_ms: ttftCount > 0 ? { p50: q(0.5), p90: q(0.9), p99: q(0.99) } : null,
    served: difference(a.totals.served, b.totals.served),
    reasons: difference(a.totals.reasons, b.totals.reasons),
  };
}

function difference(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) if (v - (a[k] ?? 0) > 0) out[k] = v - (a[k] ?? 0);
  return out;
}

/**
 * The phi-quantile of observations counted per bucket (`counts[i]` in (bounds[i-1], bounds[i]]),
 * `total` including those above the last bound: linear within the bucket, as Prometheus'
 * histogram_quantile; the last bound when it falls above it.
 */
export function bucketQuantile(bounds: readonly number[], counts: ArrayLike<number>, total: number, phi: number): number {
  if (total <= 0) return Number.NaN;
  const rank = phi * total;
  let below = 0;
  for (let i = 0; i < bounds.length; i++) {
    const c = counts[i];
    if (below + c >= rank && c > 0) {
      const lo = i === 0 ? 0 : bounds[i - 1];
      return lo + (bounds[i] - lo) * ((rank - below) / c);
    }
    below += c;
  }
  return bounds[bounds.length - 1];
}
