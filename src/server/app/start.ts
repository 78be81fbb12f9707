// Starts the whole product: the embedded fleet when asked, the router, and the uWebSockets.js
// frontend; close() stops them in the reverse order (frontend first, so no request arrives at a
// router that is shutting down).
import type { RouterConfig, RouterConfigInput } from '../config/config.js';
import { configToInput } from '../config/config.js';
import { createRouter, type Router } from './router.js';
import { startEmbeddedFleet, type EmbeddedFleet, type EmbeddedFleetOptions } from './embedded.js';
import { isLoopback } from '../call/call.js';
import { listenUws, type RunningServer } from '../http/uws.js';
import { withFields } from '../../util/objects.js';

export interface StartOptions {
  config: RouterConfig;
  embedded?: Omit<EmbeddedFleetOptions, 'blockSize' | 'model'>;
}

export interface StartedServer {
  readonly router: Router;
  readonly server: RunningServer;
  /** The loopback listener of the admin API, when the router listens beyond loopback without an admin token. */
  readonly adminServer?: RunningServer;
  readonly fleet?: EmbeddedFleet;
  /** The URLs and a ready-to-paste curl command. */
  banner(): string;
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
    router = await createRouter(input);
    // Without a token the admin API must not face the network: a router listening beyond
    // loopback serves it on a loopback listener of its own instead.
    const c = opts.config;
    if (c.adminToken === undefined && !isLoopback(c.host)) {
      const adminPort = c.adminPort ?? (c.port === 0 || c.port === 65535 ? 0 : c.port + 1);
      adminServer = await listenUws(router, { host: '127.0.0.1', port: adminPort, routes: 'admin' });
    }
    const adminAt = adminServer && `it listens on ${adminServer.url}/admin (no admin token is configured; with one it is served here)`;
    const server = await listenUws(router, { host: c.host, port: c.port, routes: adminServer ? 'public' : 'all', adminElsewhere: adminAt });
    const r = router;
    const f = fleet;
    const a = adminServer;
    let closing: Promise<void> | undefined;
    return {
      router: r,
      server,
      adminServer: a,
      fleet: f,
      banner: () => banner(server.url, a?.url ?? server.url, r, f),
      close() {
        closing ??= (async () => {
          await server.close();
          await a?.close();
          await r.close();
          await f?.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await adminServer?.close();
    await router?.close();
    await fleet?.close();
    throw err;
  }
}

function banner(url: string, adminUrl: string, router: Router, fleet: EmbeddedFleet | undefined): string {
  const model = router.config.models[0];
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Tell me about KV caches.' }], max_tokens: 48, stream: true });
  const fleetLine = fleet ? fleet.describe() : `${router.registry.list().length} workers from the configuration`;
  return [
    `kvroute listening on ${url}`,
    `  fleet    ${fleetLine}`,
    `  OpenAI   ${url}/v1/completions  ${url}/v1/chat/completions  ${url}/v1/models`,
    `  explain  ${url}/v1/route (POST a request body: the routing decision, nothing runs)`,
    `  metrics  ${url}/metrics   health ${url}/health   live ${url}/live   admin ${adminUrl}/admin/workers`,
    '',
    'Try it (the x-kvroute-* response headers name the prefill and decode workers and the overlap):',
    `  curl -N -i ${url}/v1/chat/completions -H 'content-type: application/json' -d '${body}'`,
    '',
    'Ctrl-C stops everything.',
  ].join('\n');
}
