// `kvroute serve`: the router on uWebSockets.js, in front of a real fleet (--config / --worker) or,
// by default, an embedded simulated fleet so `npm start` works with no engines and no model files.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { configToInput, loadConfigFile, parseRouterConfig, parseWorkerFlag, workerToInput, type RouterConfig } from '../server/config/config.js';
import { POLICY_NAMES } from '../core/vocabulary.js';
import type { StartOptions } from '../server/app/start.js';
import { missingRouterFlags } from './node-flags.js';
import { intFlag, UsageError } from './usage.js';

export const HELP = `usage: kvroute serve [options]

Runs the KV-aware router with its OpenAI-compatible API (POST /v1/completions,
POST /v1/chat/completions, GET /v1/models), POST /v1/route, GET /metrics, GET /health, GET /live
and the admin API under /admin.

Without --config or --worker it starts an embedded simulated fleet (the default of npm start).

Fleet:
  --config FILE           JSON config (see examples/fleet.json); flags below override it
  --worker SPEC           add a worker (repeatable): id=1,role=prefill,kind=vllm,url=http://h:8000,
                          events=tcp://h:5557,replay=tcp://h:5600,dp=1,capacity=16384,bootstrap=h:8998
                          (role aggregated|prefill|decode, kind vllm|sglang|trtllm; events/replay
                          take one endpoint per dp rank separated by '|', or one for port + rank)
  --embedded              serve an embedded simulated fleet (default when no fleet is given)
  --embedded-prefill N    simulated prefill workers (default 2; 0 = aggregated workers only)
  --embedded-decode N     simulated decode (or aggregated) workers (default 2)
  --embedded-style S      handoff style of the simulated fleet: vllm|sglang|trtllm (default vllm)
  --speedup X             simulated engines run X times faster than real time (default 1)

Listening:
  --host HOST             interface (default 127.0.0.1; env HOST)
  --port PORT             port, 0 = any free one (default 8000; env PORT)

Routing:
  --model NAME            served model name, repeatable (default kvroute-sim)
  --tokenizer DIR         HuggingFace model directory (tokenizer.json, tokenizer_config.json);
                          default: the built-in byte tokenizer of the simulated fleet
  --chat-template FILE    Jinja chat template overriding the tokenizer's (default: the tokenizer's
                          own, else ChatML)
  --block-size B          KV block size in tokens; must equal the engines' (default 16)
  --policy P              decode/aggregated pool policy: ${POLICY_NAMES.join('|')} (default kv)
  --prefill-policy P      prefill pool policy (default: same as --policy)
  --approximate           no KV events: predict caches from routing decisions
  --max-queued-prefill-tokens N   backpressure: refuse (429) above this many queued prompt tokens
  --enforce-disagg        fail requests instead of serving them aggregated without prefill workers
  --no-fallback           fail a request whose prefill leg fails instead of serving it aggregated
  --session-header NAME   session affinity: requests with this header (e.g. x-session-id) go to
                          the workers their session's earlier requests went to, while those can
                          serve (explicit worker hints win)
  --session-ttl-ms N      a session unused this long is forgotten (default 600000)

Operations:
  --admin-token TOKEN     bearer token of /admin (env KVROUTE_ADMIN_TOKEN); without one, the admin
                          API answers loopback clients only, and when --host is not a loopback
                          address it is served on its own listener on 127.0.0.1 instead
  --admin-port PORT       port of that loopback admin listener (default: --port + 1; 0 = any)
  --max-body-bytes N      request body limit, 413 above (default 4194304)
  --health-interval-ms N  period of worker health checks, 0 = off (default 5000)
  -h, --help              this help

Ctrl-C (SIGINT) or SIGTERM stops the server, the event subscribers and any embedded fleet.
`;

export type ServeOptions = StartOptions;

/** The flags `kvroute serve` takes (each documented in HELP, which a test checks). */
export const SERVE_OPTIONS = {
  config: { type: 'string' },
  worker: { type: 'string', multiple: true },
  embedded: { type: 'boolean', default: false },
  'embedded-prefill': { type: 'string', default: '2' },
  'embedded-decode': { type: 'string', default: '2' },
  'embedded-style': { type: 'string', default: 'vllm' },
  speedup: { type: 'string', default: '1' },
  host: { type: 'string' },
  port: { type: 'string' },
  model: { type: 'string', multiple: true },
  tokenizer: { type: 'string' },
  'chat-template': { type: 'string' },
  'block-size': { type: 'string' },
  policy: { type: 'string' },
  'prefill-policy': { type: 'string' },
  approximate: { type: 'boolean', default: false },
  'max-queued-prefill-tokens': { type: 'string' },
  'enforce-disagg': { type: 'boolean', default: false },
  'no-fallback': { type: 'boolean', default: false },
  'session-header': { type: 'string' },
  'session-ttl-ms': { type: 'string' },
  'admin-token': { type: 'string' },
  'admin-port': { type: 'string' },
  'max-body-bytes': { type: 'string' },
  'health-interval-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** Reads flags, env and the config file into what `serve` runs (exported for tests). */
export async function serveOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServeOptions | 'help'> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: SERVE_OPTIONS,
  });
  if (values.help) return 'help';

  // A loaded config is validated, then turned back into input form for the overrides below.
  const raw: Record<string, unknown> = values.config ? { ...configToInput(await loadConfigFile(values.config)) } : {};

  const host = values.host ?? env.HOST;
  if (host !== undefined && host !== '') raw.host = host;
  const port = values.port ?? env.PORT;
  if (port !== undefined && port !== '') raw.port = intFlag(port, values.port !== undefined ? '--port' : 'PORT', 0, 65535);
  if (values.model) raw.models = values.model;
  if (values.tokenizer) raw.tokenizer = { type: 'huggingface', path: values.tokenizer };
  if (values['chat-template']) {
    try {
      raw.chatTemplate = await readFile(values['chat-template'], 'utf8');
    } catch (err) {
      throw new UsageError(`--chat-template: cannot read ${values['chat-template']}: ${(err as Error).message}`);
    }
  }
  if (values['block-size']) raw.blockSize = intFlag(values['block-size'], '--block-size', 1, 1 << 16);
  if (values.approximate) raw.indexerMode = 'approximate';
  const routing = { ...((raw.routing as object | undefined) ?? {}) } as Record<string, unknown>;
  if (values.policy) routing.policy = checkPolicy(values.policy, '--policy');
  if (values['max-queued-prefill-tokens']) {
    routing.maxQueuedPrefillTokens = intFlag(values['max-queued-prefill-tokens'], '--max-queued-prefill-tokens', 1, 2 ** 53 - 1);
  }
  raw.routing = routing;
  if (values['prefill-policy']) raw.prefillRouting = { ...((raw.prefillRouting as object | undefined) ?? routing), policy: checkPolicy(values['prefill-policy'], '--prefill-policy') };
  if (values['enforce-disagg']) raw.enforceDisagg = true;
  if (values['no-fallback']) raw.fallbackToAggregated = false;
  if (values['session-header'] !== undefined || values['session-ttl-ms'] !== undefined) {
    const session = { ...(typeof raw.sessionAffinity === 'object' ? raw.sessionAffinity : {}) } as Record<string, unknown>;
    if (values['session-header'] !== undefined) session.header = values['session-header'];
    if (values['session-ttl-ms'] !== undefined) session.ttlMs = intFlag(values['session-ttl-ms'], '--session-ttl-ms', 1, 86_400_000);
    raw.sessionAffinity = session;
  }
  const adminToken = values['admin-token'] ?? env.KVROUTE_ADMIN_TOKEN;
  if (adminToken) raw.adminToken = adminToken;
  if (values['admin-port'] !== undefined) raw.adminPort = intFlag(values['admin-port'], '--admin-port', 0, 65535);
  if (values['max-body-bytes']) raw.maxBodyBytes = intFlag(values['max-body-bytes'], '--max-body-bytes', 1024, 1 << 30);
  if (values['health-interval-ms']) raw.health = { ...((raw.health as object | undefined) ?? {}), intervalMs: intFlag(values['health-interval-ms'], '--health-interval-ms', 0, 3_600_000) };
  const flagWorkers = (values.worker ?? []).map((spec) => {
    try {
      return parseWorkerFlag(spec);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  });
  raw.workers = [...((raw.workers as unknown[] | undefined) ?? []), ...flagWorkers.map(workerToInput)];

  let config: RouterConfig;
  try {
    config = parseRouterConfig(raw);
  } catch (err) {
    throw new UsageError(`invalid configuration: ${(err as Error).message}`);
  }
  const embedded = values.embedded || config.workers.length === 0;
  if (!embedded) return { config };
  if (config.workers.length > 0) throw new UsageError('--embedded serves its own simulated fleet: drop --worker and the config\'s workers');
  const style = values['embedded-style'];
  if (style !== 'vllm' && style !== 'sglang' && style !== 'trtllm') throw new UsageError(`--embedded-style must be vllm, sglang or trtllm, got '${style}'`);
  const speedup = Number(values.speedup);
  if (!(speedup > 0) || !Number.isFinite(speedup)) throw new UsageError(`--speedup must be a positive number, got ${values.speedup}`);
  return {
    config,
    embedded: {
      prefill: intFlag(values['embedded-prefill'], '--embedded-prefill', 0, 64),
      decode: intFlag(values['embedded-decode'], '--embedded-decode', 1, 64),
      style,
      speedup,
    },
  };
}

export async function run(argv: string[]): Promise<number> {
  const opts = await serveOptions(argv);
  if (opts === 'help') {
    console.log(HELP);
    return 0;
  }
  const missing = missingRouterFlags();
  if (missing.length > 0) {
    // A suggestion, not a requirement: the router works without them (see node-flags.ts for why).
    console.error(`kvroute: for steady latency, run the router with NODE_OPTIONS='${missing.join(' ')}' (npm start does)`);
  }
  const { startServer } = await import('../server/app/start.js');
  const server = await startServer(opts);

  // Handlers first, then the banner: a Ctrl-C sent as soon as it is printed must be caught.
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      console.log(`\n${signal}: shutting down`);
      server.close().then(resolve, (err: unknown) => {
        console.error(`kvroute: shutdown error: ${(err as Error).message}`);
        resolve();
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  console.log(server.banner());
  await stopped;
  return 0;
}

function checkPolicy(value: string, flag: string): string {
  if (!(POLICY_NAMES as readonly string[]).includes(value)) throw new UsageError(`${flag} must be one of ${POLICY_NAMES.join(', ')}, got '${value}'`);
  return value;
}
