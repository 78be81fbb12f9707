// kvroute's offline replay (`kvroute replay`: the live RoutingCore and the simulated engine model
// in virtual time) and Dynamo's (its mocker engines and router), on the same trace and fleet (4
// aggregated workers, 1M tokens of KV cache each), per policy, in alternating rounds: virtual
// seconds simulated per wall-clock second.
import { runReplay } from '../../../src/sim/replay/replay.js';
import type { TraceRequest } from '../../../src/sim/replay/trace.js';
import type { DynamoReplay, DynamoReplayRun } from './peer.js';

export const REPLAY_WORKERS = 4;
const BLOCK_SIZE = 16;
/** Dynamo's mocker default, 16,384 blocks of 64 tokens, in kvroute's 16-token blocks. */
const KV_BLOCKS = 65_536;

/** The policies both simulators have, by their names in each. */
export const POLICY_PAIRS = [
  { kvroute: 'round_robin', dynamo: 'round_robin' },
  { kvroute: 'kv', dynamo: 'kv_router' },
] as const;

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

async function kvrouteRun(trace: readonly TraceRequest[], policy: 'round_robin' | 'kv'): Promise<KvrouteReplayRun> {
  const r = await runReplay({ trace: [...trace], traceName: 'synthetic', workers: REPLAY_WORKERS, policies: [policy], blockSize: BLOCK_SIZE, kvBlocks: KV_BLOCKS, arrivalScale: 1, seed: 0 });
  const p = r.policies[policy];
  return { wall_s: p.wall_s, simulated_s: p.simulated_s, completed: p.completed, hit_rate: p.hit_rate, median_ttft_ms: p.ttft_ms.p50 };
}

export async function compareReplays(trace: readonly TraceRequest[], peer: DynamoReplay, rounds: number, log: (line: string) => void): Promise<Record<string, ReplayRound[]>> {
  const out: Record<string, ReplayRound[]> = Object.fromEntries(POLICY_PAIRS.map((p) => [p.kvroute, []]));
  for (let round = 0; round < rounds; round++) {
    for (const pair of POLICY_PAIRS) {
      let ours!: KvrouteReplayRun;
      let theirs!: DynamoReplayRun;
      for (const turn of round % 2 === 0 ? ['kvroute', 'dynamo'] : ['dynamo', 'kvroute']) {
        if (turn === 'kvroute') ours = await kvrouteRun(trace, pair.kvroute);
        else theirs = await peer.run(pair.dynamo);
      }
      out[pair.kvroute].push({ kvroute: ours, dynamo: theirs });
      log(
        `round ${round + 1}/${rounds} ${pair.kvroute}: kvroute ${ours.wall_s.toFixed(2)} s wall for ${ours.simulated_s.toFixed(0)} s simulated, ` +
          `Dynamo ${(theirs.wall_time_ms / 1000).toFixed(2)} s for ${(theirs.duration_ms / 1000).toFixed(0)} s`,
      );
    }
  }
  return out;
}
