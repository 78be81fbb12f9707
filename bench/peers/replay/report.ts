// The replay comparison as report figures: kvroute's simulated-to-wall ratio per policy against
// Dynamo's (issue 14's target: at least Dynamo's), with what each simulated, so that the reader
// sees both replayed the same trace to comparable results.
import { formatNumber } from '../../lib/format.js';
import { median } from '../../lib/stats.js';
import type { Figure, SuiteResult } from '../../lib/suite.js';
import { barChart } from '../../lib/svg.js';
import { POLICY_PAIRS, REPLAY_WORKERS, type ReplayRound } from './compare.js';

export interface ReplayComparison {
  trace: string;
  requests: number;
  rounds: Record<string, ReplayRound[]>;
}

export function kvrouteSpeed(r: ReplayRound): number {
  return r.kvroute.simulated_s / r.kvroute.wall_s;
}

/** Dynamo's own replay wall time (its runtime built and run), not the Python call around it. */
export function dynamoSpeed(r: ReplayRound): number {
  return r.dynamo.duration_ms / r.dynamo.wall_time_ms;
}

export function replayReport(c: ReplayComparison): SuiteResult {
  const figures: Figure[] = [];
  const rows: string[] = [];
  const speeds: Array<{ policy: string; kvroute: number; dynamo: number }> = [];
  for (const pair of POLICY_PAIRS) {
    const rounds = c.rounds[pair.kvroute];
    const ours = rounds.map(kvrouteSpeed);
    const theirs = rounds.map(dynamoSpeed);
    const speed = { policy: pair.kvroute, kvroute: median(ours), dynamo: median(theirs) };
    speeds.push(speed);
    figures.push({
      name: `replay speed, ${pair.kvroute} (Dynamo ${pair.dynamo}), ${c.trace}, ${REPLAY_WORKERS} workers: kvroute replay vs Dynamo's mocker replay`,
      value: speed.kvroute,
      unit: 'x real time',
      reference: { name: `Dynamo offline replay, ${pair.dynamo}`, value: speed.dynamo },
      target: { op: '>=', value: speed.dynamo },
      headline: true,
      note: `simulated seconds per wall second, median of ${rounds.length} alternating rounds (kvroute ${ours.map(formatNumber).join(', ')}; Dynamo ${theirs.map(formatNumber).join(', ')})`,
    });
    const last = rounds[rounds.length - 1];
    const k = last.kvroute;
    const d = last.dynamo;
    rows.push(
      `| ${pair.kvroute} | kvroute replay | ${formatNumber(median(rounds.map((r) => r.kvroute.wall_s)))} | ${formatNumber(k.simulated_s)} | ${formatNumber(speed.kvroute)} | ${k.completed} | ${formatNumber(k.hit_rate * 100)}% | ${formatNumber(k.median_ttft_ms)} |`,
      `| ${pair.dynamo} | Dynamo replay | ${formatNumber(median(rounds.map((r) => r.dynamo.wall_time_ms / 1000)))} (call ${formatNumber(median(rounds.map((r) => r.dynamo.call_s)))}) | ${formatNumber(d.duration_ms / 1000)} | ${formatNumber(speed.dynamo)} | ${d.completed} | ${formatNumber(d.prefix_cache_reused_ratio * 100)}% | ${formatNumber(d.median_ttft_ms)} |`,
    );
  }
  const markdown = [
    `Both replay ${c.trace}, ${c.requests} requests, offline in virtual time on ${REPLAY_WORKERS} aggregated workers of 1M tokens of KV cache`,
    "(kvroute: 65,536 blocks of 16 tokens; Dynamo's mocker default: 16,384 blocks of 64), each policy once per round, who goes",
    "first alternating. Dynamo: `run_trace_replay` of the ai-dynamo 1.6.1 wheels (installed with --no-deps: its dependency",
    'aisimulate cannot be installed here, and the offline replay does not need it), logs at warn; its speed uses its own',
    'wall_time_ms (its runtime built and run); the whole Python call, trace reading included, is shown in brackets. kvroute:',
    "runReplay (what `kvroute replay` runs) on the trace already parsed. Hit rate: kvroute's engine-reported cached prompt tokens,",
    "Dynamo's prefix_cache_reused_ratio.",
    '',
    '| policy | simulator | wall s (median) | simulated s | simulated / wall | completed | hit rate | TTFT p50 (ms) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  return {
    figures,
    sections: [{ title: "Dynamo's offline replay and kvroute's", markdown }],
    charts: [
      {
        name: 'replay-speed',
        title: 'Replay speed, kvroute and Dynamo',
        svg: barChart({
          title: `Simulated seconds per wall second, ${c.trace}`,
          categories: speeds.map((s) => s.policy),
          series: [
            { name: 'kvroute replay', values: speeds.map((s) => s.kvroute) },
            { name: 'Dynamo offline replay', values: speeds.map((s) => s.dynamo) },
          ],
          yLabel: 'x real time',
        }),
      },
    ],
    data: c,
  };
}
