// `kvroute serve`: the router on uWebSockets.js, in front of a real fleet (--config / --worker) or,
// with --embedded (npm start), an embedded simulated fleet that needs no engines and no model files.
// An empty fleet is a usage error unless workers can arrive later (--allow-empty-fleet): a router
// must never answer with simulated text by accident.
import { parseArgs } from 'node:util';
import { Value } from '@sinclair/typebox/value';
import { configToInput, loadConfigFile, parseRouterConfig, workersCanArrive, type RouterConfig } from '../server/config/config.js';
import { EmbeddedFleetSchema, RouterConfigSchema } from '../server/config/schema.js';
import type { EmbeddedFleetOptions } from '../server/app/embedded.js';
import type { StartOptions } from '../server/app/start.js';
import { missingRouterFlags } from './node-flags.js';
import { parseApiKeys } from '../server/access/api-keys.js';
import { onStopSignals } from './signals.js';
import { applyFlags, declaredFlags, helpEntries, helpEntry, parseArgsOptions, type FlagValues } from './settings-flags.js';
import { UsageError } from './usage.js';

/** The flags that set configuration settings, and those that shape the embedded fleet. */
const SETTING_FLAGS = declaredFlags(RouterConfigSchema);
const EMBEDDED_FLAGS = declaredFlags(EmbeddedFleetSchema);

export const HELP = `usage: kvroute serve [options]

Runs the KV-aware router with its OpenAI-compatible API (POST /v1/completions,
POST /v1/chat/completions, GET /v1/models), POST /v1/route, GET /metrics, GET /health, GET /live
and the admin API under /admin.

The fleet comes from --config or --worker; --embedded serves a simulated fleet instead (npm start);\n--allow-empty-fleet starts with none and takes workers from the admin API.

Fleet:
${[
  helpEntry('--config FILE', 'JSON config (see examples/fleet.json; its JSON Schema: kvroute config-schema); flags below override it'),
  ...helpEntries(SETTING_FLAGS, 'Fleet'),
  helpEntry('--embedded', 'serve an embedded simulated fleet (npm start), no engines needed'),
  ...helpEntries(EMBEDDED_FLAGS, 'Fleet'),
].join('\n')}

Listening:
${helpEntries(SETTING_FLAGS, 'Listening').join('\n')}

Routing:
${helpEntries(SETTING_FLAGS, 'Routing').join('\n')}

Access:
${helpEntries(SETTING_FLAGS, 'Access').join('\n')}

Replicas (several routers acting as one; see docs/replicas.md):
${helpEntries(SETTING_FLAGS, 'Replicas').join('\n')}

Operations:
${[...helpEntries(SETTING_FLAGS, 'Operations'), helpEntry('-h, --help', 'this help')].join('\n')}

Secrets: the command line shows in \`ps\` to every user of the machine; give the admin token and API
keys in files (--admin-token-file, --api-keys-file) or the environment (KVROUTE_ADMIN_TOKEN,
KVROUTE_API_KEYS holding the keys file's text).

SIGTERM or Ctrl-C (SIGINT) drains: /health answers 503 at once, the listeners stop accepting, the
requests in flight finish (up to --drain-timeout-ms, then streams end with an error frame), and
the process exits 0. A second signal exits at once (status 128 + the signal's number).
`;

export type ServeOptions = StartOptions;

/** The flags `kvroute serve` takes (each documented in HELP, which a test checks). */
export const SERVE_OPTIONS = {
  config: { type: 'string' },
  embedded: { type: 'boolean' },
  ...parseArgsOptions(SETTING_FLAGS),
  ...parseArgsOptions(EMBEDDED_FLAGS),
  help: { type: 'boolean', short: 'h' },
} as const;

/** Reads the config file, then the environment and the flags over it, into what `serve` runs (exported for tests). */
export async function serveOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServeOptions | 'help'> {
  const { values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: SERVE_OPTIONS });
  if (values.help) return 'help';

  // A loaded config is validated, then turned back into input form for the flags to override.
  const settings = (values.config ? configToInput(await loadConfigFile(values.config)) : {}) as Record<string, unknown>;
  await applyFlags(settings, SETTING_FLAGS, values as FlagValues, env);
  let config: RouterConfig;
  try {
    config = parseRouterConfig(settings);
  } catch (err) {
    throw new UsageError(`invalid configuration: ${(err as Error).message}`);
  }
  const fleet: Record<string, unknown> = {};
  await applyFlags(fleet, EMBEDDED_FLAGS, values as FlagValues);
  const out: ServeOptions = { config };
  const keysText = env.KVROUTE_API_KEYS;
  if (keysText !== undefined && keysText.trim() !== '') {
    try {
      out.apiKeys = parseApiKeys(keysText, 'KVROUTE_API_KEYS');
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const shaping = Object.keys(fleet);
  if (!values.embedded) {
    if (shaping.length > 0)
      throw new UsageError(
        `--${EMBEDDED_FLAGS.find((f) => f.path.at(-1) === shaping[0])?.cli.flag ?? 'embedded-*'} shapes the simulated fleet: add --embedded`,
      );
    if (config.workers.length === 0 && !workersCanArrive(config)) {
      throw new UsageError(
        "no workers: list the engines in the config's `workers` (or with --worker), or give --allow-empty-fleet to add them later through the admin API; --embedded serves a simulated fleet",
      );
    }
    return out;
  }
  if (config.workers.length > 0) throw new UsageError("--embedded serves its own simulated fleet: drop --worker and the config's workers");
  if (config.discovery?.kubernetes) throw new UsageError('--embedded serves its own simulated fleet: drop --discovery');
  out.embedded = Value.Default(EmbeddedFleetSchema, fleet) as Pick<EmbeddedFleetOptions, 'prefill' | 'decode' | 'style' | 'speedup' | 'offloadBlocks'>;
  return out;
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
  const { createLogger } = await import('../server/observability/logger.js');
  const log = createLogger({ level: opts.config.logLevel });
  const server = await startServer(Object.assign({ logger: log }, opts));

  // Handlers first, then the banner: a Ctrl-C sent as soon as it is printed must be caught.
  const stopped = onStopSignals(log, opts.config.drainTimeoutMs, async () => {
    const result = await server.drain();
    return `${result.inFlight} requests were in flight, ${result.cut} cut, ${result.booked} bookings left`;
  });
  console.log(server.banner());
  return stopped;
}
