// The replay comparison as report figures: per engine setting and policy, kvroute's
// simulated-to-wall ratio against Dynamo's (issue 14's target: at least Dynamo's), with what each
// simulated (completions, hit rate, TTFT), so that the reader sees both ran the same simulation.
import { formatCount, formatNumber } from '../../lib/format.js';
import { median } from '../../lib/stats.js';
import type { Figure, SuiteResult } from '../../lib/suite.js';
import { barChart } from '../../lib/svg.js';
import { REPLAY_WORKERS, type ReplayGroup, type ReplayRound } from './compare.js';
import { settingLabel } from './settings.js';

export interface ReplayComparison {
  trace: string;
  requests: number;
  /** Each group's rounds start with the warm-up round, which the medians leave out. */
  groups: ReplayGroup[];
}

export function kvrouteSpeed(r: ReplayRound): number {
  return r.kvroute.simulated_s / r.kvroute.wall_s;
}

/** Dynamo's own replay wall time (its runtime built and run), not the Python call around it. */
export function dynamoSpeed(r: ReplayRound): number {
  return r.dynamo.duration_ms / r.dynamo.wall_time_ms;
}

/** kvroute's wall time over Dynamo's in one round (both ran it back to back): above 1, kvroute is slower. */
export function pairedWallRatio(r: ReplayRound): number {
  return r.kvroute.wall_s / (r.dynamo.wall_time_ms / 1000);
}

const list = (values: number[]) => values.map(formatNumber).join(', ');
const range = (values: number[]) => `${formatNumber(Math.min(...values))}-${formatNumber(Math.max(...values))}`;
/** One value when every round gave it (a deterministic simulation), else the rounds' range. */
const spread = (values: number[], unit = '') => {
  const [lo, hi] = [formatNumber(Math.min(...values)), formatNumber(Math.max(...values))];
  return (lo === hi ? lo : `${lo}-${hi}`) + unit;
};

function groupFigure(c: ReplayComparison, g: ReplayGroup): Figure {
  const [warm, ...rounds] = g.rounds;
  const ours = rounds.map(kvrouteSpeed);
  const theirs = rounds.map(dynamoSpeed);
  const paired = rounds.map(pairedWallRatio);
  return {
    name: `replay speed, ${g.policy.kvroute} (Dynamo ${g.policy.dynamo}), both at ${settingLabel(g.setting)}, ${c.trace}, ${REPLAY_WORKERS} workers: kvroute replay vs Dynamo's mocker replay`,
    value: median(ours),
    unit: 'x real time',
    reference: { name: `Dynamo offline replay, ${g.policy.dynamo}`, value: median(theirs) },
    target: { op: '>=', value: median(theirs) },
    headline: true,
    note:
      `simulated seconds per wall second, median of ${rounds.length} alternating rounds after a warm-up round (kvroute ${list(ours)}; Dynamo ${list(theirs)}); ` +
      `kvroute's wall time / Dynamo's, paired per round: ${formatNumber(median(paired))} (${range(paired)}); warm-up round: kvroute ${formatNumber(kvrouteSpeed(warm))}, Dynamo ${formatNumber(dynamoSpeed(warm))}`,
  };
}

function groupRows(g: ReplayGroup): string[] {
  const [warm, ...rounds] = g.rounds;
  const paired = rounds.map(pairedWallRatio);
  const k = rounds.map((r) => r.kvroute);
  const d = rounds.map((r) => r.dynamo);
  // The Dynamo row's setting is the one its replay echoed (every round's, checked by the peer).
  const echoed = d[d.length - 1];
  return [
    `| ${g.setting.blockSize} x ${formatCount(g.setting.kvBlocks)} | ${g.policy.kvroute} | kvroute replay | ${formatNumber(median(k.map((r) => r.wall_s)))} | ${formatNumber(warm.kvroute.wall_s)} | ${spread(k.map((r) => r.simulated_s))} | ${formatNumber(median(rounds.map(kvrouteSpeed)))} | ${formatNumber(median(paired))} (${range(paired)}) | ${spread(k.map((r) => r.completed))} | ${spread(
      k.map((r) => r.hit_rate * 100),
      '%',
    )} | ${spread(k.map((r) => r.median_ttft_ms))} |`,
    `| ${echoed.block_size} x ${formatCount(echoed.num_gpu_blocks)} | ${g.policy.dynamo} | Dynamo replay | ${formatNumber(median(d.map((r) => r.wall_time_ms / 1000)))} (call ${formatNumber(median(d.map((r) => r.call_s)))}) | ${formatNumber(warm.dynamo.wall_time_ms / 1000)} | ${spread(d.map((r) => r.duration_ms / 1000))} | ${formatNumber(median(rounds.map(dynamoSpeed)))} | | ${spread(d.map((r) => r.completed))} | ${spread(
      d.map((r) => r.prefix_cache_reused_ratio * 100),
      '%',
    )} | ${spread(d.map((r) => r.median_ttft_ms))} |`,
  ];
}

export function replayReport(c: ReplayComparison): SuiteResult {
  const figures = c.groups.map((g) => groupFigure(c, g));
  const markdown = [
    `Both replay ${c.trace}, ${c.requests} requests, offline in virtual time on ${REPLAY_WORKERS} aggregated workers, with the same engine`,
    "configuration at each setting: Dynamo's mocker default (64-token blocks x 16,384 per worker) and vLLM's block size",
    "(16-token blocks x 65,536, kvroute replay's default), the same 1M tokens of KV cache. A warm-up round runs every setting and",
    'policy first and is left out of the medians (its wall times are shown); then each round runs them all, who goes first',
    'alternating. Dynamo: `run_trace_replay` of the ai-dynamo 1.6.1 wheels (installed with --no-deps: its dependency aisimulate',
    'cannot be installed here, and the offline replay does not need it), the setting passed as `extra_engine_args` and echoed',
    "back as its config normalizer read it (the Dynamo rows' setting column), logs at warn; its speed uses its own wall_time_ms",
    '(its runtime built and run); the whole Python call is shown in brackets. kvroute: runReplay (what `kvroute replay` runs) on the',
    "trace already parsed. Hit rate: kvroute's engine-reported cached prompt tokens, Dynamo's prefix_cache_reused_ratio. What each",
    "simulated is one figure when every measured round gave it, else the rounds' range (Dynamo's kv_router breaks ties between",
    'equal-cost workers at random, so its routing differs from round to round; kvroute replay is deterministic for a seed).',
    '',
    '| setting (tokens x blocks) | policy | simulator | wall s (median) | warm-up wall s | simulated s | simulated / wall | kvroute / Dynamo wall (median, range) | completed | hit rate | TTFT p50 (ms) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...c.groups.flatMap(groupRows),
  ].join('\n');
  return {
    figures,
    sections: [{ title: "Dynamo's offline replay and kvroute's", markdown }],
    charts: [
      {
        name: 'replay-speed',
        title: 'Replay speed, kvroute and Dynamo, same engine settings',
        svg: barChart({
          title: `Simulated seconds per wall second, ${c.trace}`,
          categories: c.groups.map((g) => `${g.policy.kvroute}, ${g.setting.blockSize} x ${formatCount(g.setting.kvBlocks)}`),
          series: [
            { name: 'kvroute replay', values: figures.map((f) => f.value) },
            { name: 'Dynamo offline replay', values: figures.map((f) => f.reference!.value) },
          ],
          yLabel: 'x real time',
        }),
      },
    ],
    data: c,
  };
}
