// Starts the whole product: the embedded fleet when asked, the router, and the uWebSockets.js
// frontend; close() stops them in the reverse order (frontend first, so no request arrives at a
// router that is shutting down). drain() comes before it on a signal: the listeners stop
// accepting and the requests in flight finish.
import type { RouterConfig, RouterConfigInput } from '../config/config.js';
import { configToInput } from '../config/config.js';
import { createRouter, type DrainResult, type Router } from './router.js';
import type { ApiKey } from '../access/api-keys.js';
import { redactUrl, type Logger } from '../../util/logger.js';
import { createLogger } from '../observability/logger.js';
import { startEmbeddedFleet, type EmbeddedFleet, type EmbeddedFleetOptions } from './embedded.js';
import { isLoopback } from '../call/call.js';
import { listenUws, type RunningServer } from '../http/uws.js';
import { withFields } from '../../util/objects.js';
import { packageVersion } from '../../util/package-version.js';

export interface StartOptions {
  config: RouterConfig;
  embedded?: Omit<EmbeddedFleetOptions, 'blockSize' | 'model'>;
  /** Default: kvroute's own at config.logLevel, on stderr. */
  logger?: Logger;
  /** API keys besides config.apiKeysFile (kvroute serve: KVROUTE_API_KEYS). */
  apiKeys?: readonly ApiKey[];
}

export interface StartedServer {
  readonly router: Router;
  readonly server: RunningServer;
  /** The loopback listener of the admin API, when the router listens beyond loopback without an admin token. */
  readonly adminServer?: RunningServer;
  readonly fleet?: EmbeddedFleet;
  /** The URLs and a ready-to-paste curl command. */
  banner(): string;
  /** Stops accepting connections, lets requests in flight finish (router.drain), then closes everything. */
  drain(timeoutMs?: number): Promise<DrainResult>;
  close(): Promise<void>;
}

export async function startServer(opts: StartOptions): Promise<StartedServer> {
  let fleet: EmbeddedFleet | undefined;
  let router: Router | undefined;
  let adminServer: RunningServer | undefined;
  try {
    const input: RouterConfigInput = configToInput(opts.config);
    if (opts.embedded) {
      fleet = await startEmbeddedFleet(withFields(opts.embedded, { blockSize: opts.config.blockSize, model: opts.config.models[0] }));
      input.workers = fleet.workers;
    }
    const log = opts.logger ?? createLogger({ level: opts.config.logLevel });
    router = await createRouter(input, { logger: log, apiKeys: opts.apiKeys });
    // Without a token the admin API must not face the network: a router listening beyond
    // loopback serves it on a loopback listener of its own instead.
    const c = router.config;
    const listen = {
      reusePort: c.reusePort,
      tls: c.tls,
      onWaitForRelease: () => log.warn('the port is held by the closed connections of a process that ended (TIME_WAIT, up to 60 s): waiting for it'),
    };
    if (c.adminToken === undefined && !isLoopback(c.host)) {
      const adminPort = c.adminPort ?? (c.port === 0 || c.port === 65535 ? 0 : c.port + 1);
      adminServer = await listenUws(router, withFields(listen, { host: '127.0.0.1', port: adminPort, routes: 'admin' as const }));
    }
    const adminAt = adminServer && `it listens on ${adminServer.url}/admin (no admin token is configured; with one it is served here)`;
    const server = await listenUws(
      router,
      withFields(listen, { host: c.host, port: c.port, routes: adminServer ? ('public' as const) : ('all' as const), adminElsewhere: adminAt }),
    );
    const r = router;
    const f = fleet;
    const a = adminServer;
    log.info(startupFields(r, server.url, a?.url, f, opts.apiKeys?.length ?? 0), 'kvroute started');
    let closing: Promise<void> | undefined;
    const close = () => {
      closing ??= (async () => {
        await server.close();
        await a?.close();
        await r.close();
        await f?.close();
      })();
      return closing;
    };
    return {
      router: r,
      server,
      adminServer: a,
      fleet: f,
      banner: () => banner(server.url, a?.url ?? server.url, r, f),
      async drain(timeoutMs) {
        server.stopAccepting();
        a?.stopAccepting();
        const result = await r.drain({ timeoutMs });
        await close();
        return result;
      },
      close,
    };
  } catch (err) {
    await adminServer?.close();
    await router?.close();
    await fleet?.close();
    throw err;
  }
}

/** The startup line: version, listeners and the configuration's shape, secrets left out. */
function startupFields(
  router: Router,
  url: string,
  adminUrl: string | undefined,
  fleet: EmbeddedFleet | undefined,
  keysPassedIn: number,
): Record<string, unknown> {
  const c = router.config;
  const keySources = [
    c.apiKeysFile !== undefined ? `the file ${c.apiKeysFile}` : '',
    keysPassedIn > 0 ? `${keysPassedIn} passed in (KVROUTE_API_KEYS)` : '',
  ].filter((s) => s !== '');
  return {
    version: packageVersion(),
    node: process.version,
    listen: url,
    admin: adminUrl ?? `${url}/admin`,
    admin_access: c.adminToken !== undefined ? 'bearer token' : 'loopback clients only',
    api_keys: keySources.length > 0 ? keySources.join(' and ') : 'none (the OpenAI routes are open)',
    rate_limit: c.rateLimit,
    tls: c.tls !== undefined,
    reuse_port: c.reusePort,
    fleet: fleet ? fleet.describe() : `${router.registry.list().length} workers`,
    discovery: c.discovery?.kubernetes ? { source: 'kubernetes', selector: c.discovery.kubernetes.selector } : false,
    models: c.models,
    tokenizer: c.tokenizer.type === 'byte' ? 'byte' : c.tokenizer.path,
    block_size: c.blockSize,
    indexer: c.indexerMode,
    policy: { decode: c.decode.policy, prefill: c.prefill.policy },
    session_affinity: c.sessionAffinity?.header ?? false,
    replicas: c.replicas ? c.replicas.nats.split(',').map(redactUrl).join(',') : false,
    health_interval_ms: c.health.intervalMs,
    max_retries: c.maxRetries,
    ejection: c.outlierDetection.enabled ? { base_ms: c.outlierDetection.baseEjectionTimeMs, max_percent: c.outlierDetection.maxEjectionPercent } : false,
    max_body_bytes: c.maxBodyBytes,
    max_tokens_limit: c.maxTokensLimit,
    drain_timeout_ms: c.drainTimeoutMs,
    log_level: c.logLevel,
  };
}

function banner(url: string, adminUrl: string, router: Router, fleet: EmbeddedFleet | undefined): string {
  const model = router.config.models[0];
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Tell me about KV caches.' }], max_tokens: 48, stream: true });
  const kube = router.config.discovery?.kubernetes;
  const fleetLine = fleet
    ? fleet.describe()
    : `${router.registry.list().length} workers${kube ? `, more discovered from the pods matching '${kube.selector}'` : ' from the configuration'}`;
  return [
    `kvroute listening on ${url}`,
    `  fleet    ${fleetLine}`,
    `  OpenAI   ${url}/v1/completions  ${url}/v1/chat/completions  ${url}/v1/models`,
    `  explain  ${url}/v1/route (POST a request body: the routing decision, nothing runs)`,
    `  metrics  ${url}/metrics   health ${url}/health   live ${url}/live   admin ${adminUrl}/admin/workers`,
    `  live page of the fleet  ${adminUrl}/dashboard`,
    '',
    'Try it (the x-kvroute-* response headers name the prefill and decode workers and the overlap):',
    `  curl -N -i ${url}/v1/chat/completions -H 'content-type: application/json' -d '${body}'`,
    '',
    'Ctrl-C stops everything.',
  ].join('\n');
}
