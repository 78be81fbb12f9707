// Dynamo's offline replay (its mocker engines and KV router in virtual time), from the ai-dynamo
// 1.6.1 wheels installed with --no-deps into a venv under bench/.cache/peers/ (its dependency
// aisimulate cannot be installed here; the offline replay does not import it, and needs only
// typing_extensions besides the two wheels). driver.py runs the replays, one per command.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachePath, installedMarker, runStep } from '../cache.js';
import { LinePeer } from '../line-peer.js';

export const DYNAMO_WHEELS = ['ai-dynamo==1.6.1', 'ai-dynamo-runtime==1.6.1', 'typing_extensions==4.15.0'];
const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));

/** The venv's python, installing the wheels first when needed (once; about 250 MB). */
export async function installDynamoReplay(log: (line: string) => void): Promise<string> {
  const venv = cachePath('dynamo-1.6.1');
  const python = join(venv, 'bin', 'python');
  const marker = installedMarker(venv, DYNAMO_WHEELS.join(' '));
  if (marker.done() && existsSync(python)) return python;
  log(`installing ${DYNAMO_WHEELS.join(', ')} (--no-deps) from PyPI into ${venv} (once; about 250 MB)`);
  rmSync(venv, { recursive: true, force: true });
  const base = process.env.KVROUTE_BENCH_PYTHON ?? 'python3';
  await runStep(base, ['-m', 'venv', venv], { what: "creating the Dynamo replay venv", missingHint: 'the Dynamo replay needs Python 3.11 to 3.13; KVROUTE_BENCH_PYTHON names another interpreter', log });
  await runStep(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--quiet', '--no-deps', ...DYNAMO_WHEELS], {
    what: 'installing the ai-dynamo 1.6.1 wheels',
    registry: 'PyPI',
    log,
  });
  await runStep(python, ['-c', 'import dynamo.replay'], { what: "importing Dynamo's replay from the wheels", log });
  marker.record();
  return python;
}

export interface DynamoReplayRun {
  type: 'run';
  router_mode: string;
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

export class DynamoReplay {
  private constructor(private readonly peer: LinePeer) {}

  static async start(python: string, trace: string, workers: number): Promise<DynamoReplay> {
    // Its router logs every decision at INFO by default, which would be timed with the replay.
    const peer = await LinePeer.start("Dynamo's replay", python, [DRIVER, trace, String(workers)], { ...process.env, DYN_LOG: 'warn' });
    await peer.next('ready');
    return new DynamoReplay(peer);
  }

  run = (routerMode: 'round_robin' | 'kv_router') => this.peer.command<DynamoReplayRun>(`run ${routerMode}`, 'run');
  close = () => this.peer.close();
}
