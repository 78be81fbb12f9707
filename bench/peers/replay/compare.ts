// kvroute's offline replay (`kvroute replay`: the live RoutingCore and the simulated engine model
// in virtual time) and Dynamo's (its mocker engines and router), on the same trace and fleet (4
// aggregated workers, 1M tokens of KV cache each) with the same engine configuration, per
// setting and policy, in alternating rounds: virtual seconds simulated per wall-clock second.
import { runReplay } from '../../../src/sim/replay/replay.js';
import type { TraceRequest } from '../../../src/sim/replay/trace.js';
import type { DynamoReplay, DynamoReplayRun } from './peer.js';
import { checkReplaySetting, settingLabel, type ReplaySetting } from './settings.js';

export const REPLAY_WORKERS = 4;

/** The policies both simulators have, by their names in each. */
export const POLICY_PAIRS = [
  { kvroute: 'round_robin', dynamo: 'round_robin' },
  { kvroute: 'kv', dynamo: 'kv_router' },
] as const;

export type PolicyPair = (typeof POLICY_PAIRS)[number];

export interface KvrouteReplayRun {
  wall_s: number;
  simulated_s: number;
  completed: number;
  hit_rate: number;
  median_ttft_ms: number;
}

export interface ReplayRound {
  kvroute: KvrouteReplayRun;
  dynamo: DynamoReplayRun;
}

/** One setting and policy: its rounds, in order (the first is the warm-up). */
export interface ReplayGroup {
  setting: ReplaySetting;
  policy: PolicyPair;
  rounds: ReplayRound[];
}

async function kvrouteRun(trace: readonly TraceRequest[], policy: 'round_robin' | 'kv', s: ReplaySetting): Promise<KvrouteReplayRun> {
  const r = await runReplay({
    trace: [...trace],
    traceName: 'synthetic',
    workers: REPLAY_WORKERS,
    policies: [policy],
    blockSize: s.blockSize,
    kvBlocks: s.kvBlocks,
    arrivalScale: 1,
    seed: 0,
  });
  const p = r.policies[policy];
  return { wall_s: p.wall_s, simulated_s: p.simulated_s, completed: p.completed, hit_rate: p.hit_rate, median_ttft_ms: p.ttft_ms.p50 };
}

/**
 * `rounds` rounds (plus a first, warm-up one: kvroute's code compiled by V8, Dynamo's first
 * replay), each running every setting and policy on both simulators, who goes first alternating.
 */
export async function compareReplays(
  trace: readonly TraceRequest[],
  peer: DynamoReplay,
  settings: readonly ReplaySetting[],
  rounds: number,
  log: (line: string) => void,
): Promise<ReplayGroup[]> {
  const groups: ReplayGroup[] = settings.flatMap((setting) =>
    POLICY_PAIRS.map((policy) => ({ setting: checkReplaySetting(setting), policy, rounds: [] as ReplayRound[] })),
  );
  for (let round = 0; round <= rounds; round++) {
    for (const g of groups) {
      let ours!: KvrouteReplayRun;
      let theirs!: DynamoReplayRun;
      for (const turn of round % 2 === 0 ? ['kvroute', 'dynamo'] : ['dynamo', 'kvroute']) {
        if (turn === 'kvroute') ours = await kvrouteRun(trace, g.policy.kvroute, g.setting);
        else theirs = await peer.run(g.policy.dynamo, g.setting);
      }
      g.rounds.push({ kvroute: ours, dynamo: theirs });
      log(
        `${round === 0 ? 'warm-up round' : `round ${round}/${rounds}`} ${settingLabel(g.setting)}, ${g.policy.kvroute}: ` +
          `kvroute ${ours.wall_s.toFixed(2)} s wall for ${ours.simulated_s.toFixed(0)} s simulated, ` +
          `Dynamo ${(theirs.wall_time_ms / 1000).toFixed(2)} s for ${(theirs.duration_ms / 1000).toFixed(0)} s`,
      );
    }
  }
  return groups;
}
