// Dynamo's offline replay (its mocker engines and KV router in virtual time), from the ai-dynamo
// 1.6.1 wheels installed with --no-deps into a venv under bench/.cache/peers/ (its dependency
// aisimulate cannot be installed here; the offline replay does not import it, and needs only
// typing_extensions besides the two wheels). driver.py runs the replays, one per command.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installVenv } from '../cache.js';
import { LinePeer } from '../line-peer.js';
import { checkReplaySetting, type ReplaySetting } from './settings.js';

export const DYNAMO_WHEELS = ['ai-dynamo==1.6.1', 'ai-dynamo-runtime==1.6.1', 'typing_extensions==4.15.0'];
const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));

/** The venv's python, installing the wheels first when needed (once; about 250 MB). */
export async function installDynamoReplay(log: (line: string) => void): Promise<string> {
  const venv = await installVenv({
    folder: 'dynamo-1.6.1',
    packages: DYNAMO_WHEELS,
    noDeps: true,
    what: "Dynamo's offline replay (ai-dynamo 1.6.1)",
    pythonHint: 'the ai-dynamo wheels need Python 3.10 or later',
    check: 'import dynamo.replay',
    log,
  });
  return join(venv, 'bin', 'python');
}

export interface DynamoReplayRun {
  type: 'run';
  router_mode: string;
  /** The engines' KV block size and cache blocks as Dynamo's config normalizer read the command's. */
  block_size: number;
  num_gpu_blocks: number;
  /** The whole call, trace reading included. */
  call_s: number;
  /** Dynamo's own replay wall time (its runtime built and run). */
  wall_time_ms: number;
  /** Simulated time. */
  duration_ms: number;
  requests: number;
  completed: number;
  prefix_cache_reused_ratio: number;
  median_ttft_ms: number;
}

/** driver.py's command for one replay. */
export function dynamoRunCommand(routerMode: 'round_robin' | 'kv_router', setting: ReplaySetting): string {
  if (routerMode !== 'round_robin' && routerMode !== 'kv_router') throw new RangeError(`unknown router mode ${String(routerMode)}`);
  checkReplaySetting(setting);
  return `run ${routerMode} ${setting.blockSize} ${setting.kvBlocks}`;
}

/** The replay ran with the engines it was asked for (a key Dynamo ignored would show here). */
export function checkEcho(reply: DynamoReplayRun, setting: ReplaySetting): DynamoReplayRun {
  if (reply.block_size !== setting.blockSize || reply.num_gpu_blocks !== setting.kvBlocks) {
    throw new Error(
      `Dynamo's replay ran ${reply.block_size}-token blocks x ${reply.num_gpu_blocks}, not the ${setting.blockSize} x ${setting.kvBlocks} asked for`,
    );
  }
  return reply;
}

export class DynamoReplay {
  private constructor(private readonly peer: LinePeer) {}

  static async start(python: string, trace: string, workers: number, env: NodeJS.ProcessEnv = process.env): Promise<DynamoReplay> {
    // Its router logs every decision at INFO by default, which would be timed with the replay.
    const peer = await LinePeer.start("Dynamo's replay", python, [DRIVER, trace, String(workers)], { ...env, DYN_LOG: 'warn' });
    await peer.next('ready');
    return new DynamoReplay(peer);
  }

  /** One replay with the engines at `setting`; refuses a reply whose echoed config is not that setting. */
  async run(routerMode: 'round_robin' | 'kv_router', setting: ReplaySetting): Promise<DynamoReplayRun> {
    const reply = await this.peer.command<DynamoReplayRun>(dynamoRunCommand(routerMode, setting), 'run');
    return checkEcho(reply, setting);
  }

  close = () => this.peer.close();
}
