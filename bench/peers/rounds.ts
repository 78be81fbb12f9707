// Figures from alternating rounds: each round summarized alone, the reported figure the median
// over rounds (a stall of the shared machine moves one round, not the figure), the pooled
// samples kept alongside.
import { median, summarize, type Summary } from '../lib/stats.js';

export interface RoundsSummary {
  p50: number;
  p90: number;
  p99: number;
  roundP50: number[];
  roundP99: number[];
  pooled: Summary;
}

/** Per-call samples per round (any unit) to medians over rounds of each round's percentiles. */
export function summarizeRounds(rounds: ReadonlyArray<ArrayLike<number>>): RoundsSummary {
  const nonEmpty = rounds.filter((r) => r.length > 0);
  if (nonEmpty.length === 0) throw new RangeError('summarizeRounds needs at least one round with samples');
  const each = nonEmpty.map((r) => summarize(r));
  const pooled = summarize(nonEmpty.flatMap((r) => Array.from(r)));
  return {
    p50: median(each.map((s) => s.p50)),
    p90: median(each.map((s) => s.p90)),
    p99: median(each.map((s) => s.p99)),
    roundP50: each.map((s) => s.p50),
    roundP99: each.map((s) => s.p99),
    pooled,
  };
}

/** Work per second in each round, and their median. */
export function rates(work: number, secondsPerRound: readonly number[]): { median: number; rounds: number[] } {
  const rounds = secondsPerRound.map((s) => work / s);
  return { median: median(rounds), rounds };
}
