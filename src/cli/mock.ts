// `kvroute mock`: simulated engine workers speaking the real engines' protocols (OpenAI HTTP,
// ZeroMQ KV events, prefill/decode handoffs), for trying kvroute without GPUs. Runs until Ctrl-C.
import { parseArgs } from 'node:util';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { EVENT_ENCODINGS, type EventEncoding } from '../sim/worker/kv-event-encoding.js';
import { ENGINE_KINDS, WORKER_ROLES, type WorkerRole } from '../core/vocabulary.js';
import type { PdStyle } from '../sim/worker/handoff/types.js';
import { SCHEDULING_POLICIES, type SchedulingPolicy } from '../sim/engine/index.js';
import { UsageError, bandwidthFlag, intFlag } from './usage.js';
import { LOG_LEVELS, type Logger, type LogLevel } from '../util/logger.js';
import { onStopSignals } from './signals.js';

/** Not 8000: that is where npm start's router listens, and two servers must not share a port. */
export const MOCK_DEFAULT_PORT = 8100;

export const HELP = `usage: kvroute mock [options]

Starts simulated engine workers (a vLLM-like paged, prefix-cached KV cache) that speak the real
engines' protocols. Ports count up from the given ones, one per worker; 0 picks free ports.

options:
  --workers N           number of workers (default 1, or as many as --ids names)
  --id N                id of the first worker; the others count up (default 0)
  --ids A,B,...         every worker's id, e.g. 4,5 (instead of --id). Ids tell mock processes
                        apart: in /health, the engine label of /metrics and the lines below
  --role R              aggregated | prefill | decode (default aggregated)
  --pd-style S          prefill/decode handoff style: vllm | sglang | trtllm (default vllm)
  --host H              address to bind (default 127.0.0.1)
  --port P              HTTP port of the first worker (default 8100: npm start's router has 8000)
  --zmq-port Z          ZeroMQ KV event PUB port of the first worker (default 5557)
  --replay-port R       ZeroMQ replay ROUTER port of the first worker (default 5600)
  --bootstrap-port B    KV side channel / bootstrap port of the first prefill worker (default 8998)
  --block-size B        tokens per KV block (default 16)
  --kv-blocks K         KV cache size in blocks (default 16384)
  --offload-blocks N    a CPU offload tier of N blocks: evicted GPU blocks move there (KV events with
                        medium CPU) and are reloaded instead of recomputed (default 0: none)
  --offload-bandwidth B its reload bandwidth in bytes/s (default 25e9: PCIe 4.0 x16)
  --scheduling-policy P fcfs | priority: the order of each engine's waiting queue, as vLLM's
                        --scheduling-policy (default fcfs). Under priority a request's body
                        \`priority\` orders it (lower first with --pd-style vllm, higher first
                        with sglang); under fcfs a non-zero priority is refused (400), as vLLM does
  --speedup S           divide all modelled times by S (default 1)
  --event-encoding E    map (current vLLM) | array (legacy positional) (default map)
  --seed X              seed of the first worker; the others use X+1, X+2, ... (default 0)
  --model NAME          served model name (default kvroute-sim)
  --reuse-port          share the HTTP ports with other processes (SO_REUSEPORT); without it a busy
                        port is an error
  --drain-timeout-ms N  on SIGTERM/SIGINT, how long requests in flight may finish (default 30000)
  --log-level L         fatal|error|warn|info|debug|trace|silent for the lines on stderr (default
                        info; env KVROUTE_LOG_LEVEL)
  -h, --help            show this help

SIGTERM or Ctrl-C drains: /health answers 503, no new connections, requests in flight finish (then
streams are cut with an error event), exit status 0; a second signal exits at once (128 + signal).

example:
  kvroute mock --workers 2
  curl -N localhost:8100/v1/completions -H 'content-type: application/json' \\
    -d '{"prompt":"Hello","max_tokens":8,"stream":true}'`;

export interface MockConfig {
  workers: number;
  /** Each worker's id, in order. */
  ids: number[];
  role: WorkerRole;
  pdStyle: PdStyle;
  host: string;
  port: number;
  zmqPort: number;
  replayPort: number;
  bootstrapPort: number;
  blockSize: number;
  kvBlocks: number;
  offloadBlocks: number;
  offloadBandwidthBytesPerS?: number;
  schedulingPolicy: SchedulingPolicy;
  speedup: number;
  eventEncoding: EventEncoding;
  seed: number;
  model: string;
  reusePort: boolean;
  drainTimeoutMs: number;
  logLevel: LogLevel;
}

/** Parses the flags; a UsageError (exit status 2) names any bad one. Returns null for --help. */
export function parseMockArgs(argv: string[], env: NodeJS.ProcessEnv = {}): MockConfig | null {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      workers: { type: 'string' },
      id: { type: 'string' },
      ids: { type: 'string' },
      role: { type: 'string', default: 'aggregated' },
      'pd-style': { type: 'string', default: 'vllm' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: String(MOCK_DEFAULT_PORT) },
      'zmq-port': { type: 'string', default: '5557' },
      'replay-port': { type: 'string', default: '5600' },
      'bootstrap-port': { type: 'string', default: '8998' },
      'block-size': { type: 'string', default: '16' },
      'kv-blocks': { type: 'string', default: '16384' },
      'offload-blocks': { type: 'string', default: '0' },
      'offload-bandwidth': { type: 'string' },
      'scheduling-policy': { type: 'string', default: 'fcfs' },
      speedup: { type: 'string', default: '1' },
      'event-encoding': { type: 'string', default: 'map' },
      seed: { type: 'string', default: '0' },
      model: { type: 'string', default: 'kvroute-sim' },
      'reuse-port': { type: 'boolean', default: false },
      'drain-timeout-ms': { type: 'string', default: '30000' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return null;
  if (positionals.length > 0) throw new UsageError(`kvroute mock takes no positional arguments, got '${positionals[0]}'`);
  const ids = workerIds(values.id, values.ids, values.workers);
  const workers = ids.length;
  const lastPortOffset = workers - 1;
  const port = (raw: string | undefined, name: string) => {
    const p = intFlag(raw, name, 0, 65535);
    if (p !== 0 && p + lastPortOffset > 65535) throw new UsageError(`${name} ${p} leaves no room for ${workers} workers (ports count up)`);
    return p;
  };
  const speedup = Number(values.speedup);
  if (!Number.isFinite(speedup) || speedup <= 0) throw new UsageError(`--speedup must be a number > 0, got ${values.speedup}`);
  const host = values.host as string;
  if (host.trim() === '') throw new UsageError('--host must not be empty');
  const model = values.model as string;
  if (model.trim() === '') throw new UsageError('--model must not be empty');
  return {
    workers,
    ids,
    role: oneOf(values.role, '--role', WORKER_ROLES),
    pdStyle: oneOf(values['pd-style'], '--pd-style', ENGINE_KINDS),
    host,
    port: port(values.port, '--port'),
    zmqPort: port(values['zmq-port'], '--zmq-port'),
    replayPort: port(values['replay-port'], '--replay-port'),
    bootstrapPort: port(values['bootstrap-port'], '--bootstrap-port'),
    blockSize: intFlag(values['block-size'], '--block-size', 1, 1 << 16),
    kvBlocks: intFlag(values['kv-blocks'], '--kv-blocks', 1, 1 << 30),
    offloadBlocks: intFlag(values['offload-blocks'], '--offload-blocks', 0, 1 << 28),
    ...(values['offload-bandwidth'] === undefined ? {} : { offloadBandwidthBytesPerS: bandwidthFlag(values['offload-bandwidth'], '--offload-bandwidth') }),
    schedulingPolicy: oneOf(values['scheduling-policy'], '--scheduling-policy', SCHEDULING_POLICIES),
    speedup,
    eventEncoding: oneOf(values['event-encoding'], '--event-encoding', EVENT_ENCODINGS),
    seed: intFlag(values.seed, '--seed', 0, 2 ** 31),
    model,
    reusePort: values['reuse-port'] === true,
    drainTimeoutMs: intFlag(values['drain-timeout-ms'], '--drain-timeout-ms', 0, 3_600_000),
    logLevel:
      values['log-level'] !== undefined
        ? oneOf(values['log-level'], '--log-level', LOG_LEVELS)
        : env.KVROUTE_LOG_LEVEL
          ? oneOf(env.KVROUTE_LOG_LEVEL, 'KVROUTE_LOG_LEVEL', LOG_LEVELS)
          : 'info',
  };
}

/** The workers' ids from --id (counted up over --workers) or --ids (one each). */
function workerIds(rawId: string | undefined, rawIds: string | undefined, rawWorkers: string | undefined): number[] {
  if (rawIds === undefined) {
    const workers = rawWorkers === undefined ? 1 : intFlag(rawWorkers, '--workers', 1, 1024);
    const first = rawId === undefined ? 0 : intFlag(rawId, '--id', 0, Number.MAX_SAFE_INTEGER - workers);
    return Array.from({ length: workers }, (_, i) => first + i);
  }
  if (rawId !== undefined) throw new UsageError('give either --id or --ids, not both');
  const ids = rawIds.split(',').map((part) => intFlag(part, '--ids', 0, Number.MAX_SAFE_INTEGER));
  if (ids.length > 1024) throw new UsageError(`--ids names ${ids.length} workers, at most 1024`);
  if (new Set(ids).size !== ids.length) throw new UsageError(`--ids must be distinct, got ${rawIds}`);
  if (rawWorkers !== undefined && intFlag(rawWorkers, '--workers', 1, 1024) !== ids.length) {
    throw new UsageError(`--workers ${rawWorkers} disagrees with --ids, which names ${ids.length}`);
  }
  return ids;
}

function oneOf<T extends string>(raw: string | undefined, name: string, allowed: readonly T[]): T {
  if (!allowed.includes(raw as T)) throw new UsageError(`${name} must be one of ${allowed.join(', ')}, got ${raw}`);
  return raw as T;
}

export async function startMock(cfg: MockConfig): Promise<SimFleet> {
  return startSimFleet({
    workers: cfg.workers,
    ids: cfg.ids,
    role: cfg.role,
    pdStyle: cfg.pdStyle,
    host: cfg.host,
    eventEncoding: cfg.eventEncoding,
    model: cfg.model,
    basePorts: { http: cfg.port, zmq: cfg.zmqPort, replay: cfg.replayPort, bootstrap: cfg.bootstrapPort },
    engine: {
      blockSize: cfg.blockSize,
      kvBlocks: cfg.kvBlocks,
      speedup: cfg.speedup,
      schedulingPolicy: cfg.schedulingPolicy,
      seed: cfg.seed,
      offloadBlocks: cfg.offloadBlocks,
      ...(cfg.offloadBandwidthBytesPerS === undefined ? {} : { offloadBandwidthBytesPerS: cfg.offloadBandwidthBytesPerS }),
    },
    reusePort: cfg.reusePort,
  });
}

export function describeFleet(fleet: SimFleet): string[] {
  return fleet.workers.map((w) => {
    const parts = [`worker ${w.id} (${w.role}, ${w.pdStyle})`, `http ${w.url}`, `events ${w.eventsEndpoint}`, `replay ${w.replayEndpoint}`];
    if (w.bootstrap) parts.push(`bootstrap ${w.bootstrap.host}:${w.bootstrap.port}`);
    return parts.join('  ');
  });
}

/**
 * Runs until SIGINT/SIGTERM (or `signal` aborts, for embedding and tests), then drains and stops
 * cleanly (see HELP); `logger` gets the lifecycle lines (default: kvroute's own on stderr).
 */
export async function run(argv: string[], opts: { signal?: AbortSignal; log?: (line: string) => void; logger?: Logger } = {}): Promise<number> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const cfg = parseMockArgs(argv, process.env);
  if (!cfg) {
    log(HELP);
    return 0;
  }
  const logger =
    opts.logger ?? (await import('../server/observability/logger.js')).createLogger({ level: cfg.logLevel, base: { name: 'kvroute-mock', pid: process.pid } });
  const fleet = await startMock(cfg);
  // Handlers first, then the ready message: a Ctrl-C sent as soon as it is printed must be caught.
  const stopped = onStopSignals(
    logger,
    cfg.drainTimeoutMs,
    async () => {
      const result = await fleet.drain(cfg.drainTimeoutMs);
      await fleet.close();
      return `${result.inFlight} requests were in flight, ${result.cut} cut`;
    },
    opts.signal,
  );
  for (const line of describeFleet(fleet)) log(line);
  log(`KV events: topic "kv-events", ${cfg.eventEncoding} encoding, block size ${cfg.blockSize}. Ctrl-C stops.`);
  logger.info({ workers: fleet.workers.map((w) => ({ id: w.id, role: w.role, url: w.url })) }, 'kvroute mock started');
  const status = await stopped;
  log('stopped');
  return status;
}
