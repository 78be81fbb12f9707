// Charts of replay reports that more than one suite draws.
import type { ReplayReport } from '../../src/sim/replay/replay.js';
import { lineChart } from './svg.js';

/** TTFT p90 of each policy against the offered load of a load sweep (log scale). */
export function ttftVsLoadChart(sweep: NonNullable<ReplayReport['sweep']>, policies: readonly string[], title: string): string {
  return lineChart({
    title,
    xLabel: 'offered load (req/s)',
    yLabel: 'TTFT p90 (ms)',
    logY: true,
    markers: true,
    series: policies.map((p) => ({
      name: p,
      points: sweep.filter((pt) => pt.policies[p]).map((pt) => [pt.offered_rps, pt.policies[p].ttft_p90_ms] as [number, number]),
    })),
  });
}
