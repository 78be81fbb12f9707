// Router overhead from alternating rounds: each round measures the direct path (load generator
// straight to the engine) and the routed path at the same rate, one after the other (their order
// alternating from round to round), and takes routed minus direct at each percentile. The
// headline is the median over rounds, so a stretch of the shared machine's stalls that falls on
// one run of one path moves one round, not the figure; all rounds and the pooled figure are kept.
import { median, percentile } from '../lib/stats.js';

export interface RoundLatencies {
  /** Sorted latencies in ms. */
  direct: Float64Array;
  routed: Float64Array;
}

export interface OverheadRounds {
  rounds: number;
  /** Routed minus direct, per round. */
  round_overhead_p50_ms: number[];
  round_overhead_p99_ms: number[];
  /** Medians over the rounds: the reported overhead. */
  overhead_p50_ms: number;
  overhead_p99_ms: number;
  /** Every round's latencies pooled, per path. */
  direct_p50_ms: number;
  direct_p99_ms: number;
  routed_p50_ms: number;
  routed_p99_ms: number;
  /** Pooled routed minus pooled direct (a single stall weighs here in full). */
  pooled_overhead_p99_ms: number;
}

export function overheadFromRounds(rounds: readonly RoundLatencies[]): OverheadRounds {
  if (rounds.length === 0) throw new RangeError('overheadFromRounds needs at least one round');
  for (const r of rounds) {
    if (r.direct.length === 0 || r.routed.length === 0) throw new RangeError('every round needs latencies on both paths');
  }
  const diff = (r: RoundLatencies, p: number) => percentile(r.routed, p) - percentile(r.direct, p);
  const p50s = rounds.map((r) => round3(diff(r, 50)));
  const p99s = rounds.map((r) => round3(diff(r, 99)));
  const direct = pooled(rounds.map((r) => r.direct));
  const routed = pooled(rounds.map((r) => r.routed));
  return {
    rounds: rounds.length,
    round_overhead_p50_ms: p50s,
    round_overhead_p99_ms: p99s,
    overhead_p50_ms: round3(median(p50s)),
    overhead_p99_ms: round3(median(p99s)),
    direct_p50_ms: round3(percentile(direct, 50)),
    direct_p99_ms: round3(percentile(direct, 99)),
    routed_p50_ms: round3(percentile(routed, 50)),
    routed_p99_ms: round3(percentile(routed, 99)),
    pooled_overhead_p99_ms: round3(percentile(routed, 99) - percentile(direct, 99)),
  };
}

function pooled(parts: readonly Float64Array[]): Float64Array {
  const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all.sort();
}

/** Milliseconds to the microsecond, as the report prints them. */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
