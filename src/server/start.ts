// Starts the whole product: the embedded fleet when asked, the router, and the uWebSockets.js
// frontend; close() stops them in the reverse order (frontend first, so no request arrives at a
// router that is shutting down).
import type { RouterConfig, RouterConfigInput } from './config.js';
import { configToInput } from './config.js';
import { createRouter, type Router } from './app.js';
import { startEmbeddedFleet, type EmbeddedFleet, type EmbeddedFleetOptions } from './embedded.js';
import { listenUws, type RunningServer } from './uws.js';
import { withFields } from '../core/objects.js';

export interface StartOptions {
  config: RouterConfig;
  embedded?: Omit<EmbeddedFleetOptions, 'blockSize' | 'model'>;
}

export interface StartedServer {
  readonly router: Router;
  readonly server: RunningServer;
  readonly fleet?: EmbeddedFleet;
  /** The URLs and a ready-to-paste curl command. */
  banner(): string;
  close(): Promise<void>;
}

export async function startServer(opts: StartOptions): Promise<StartedServer> {
  let fleet: EmbeddedFleet | undefined;
  let router: Router | undefined;
  try {
    const input: RouterConfigInput = configToInput(opts.config);
    if (opts.embedded) {
      fleet = await startEmbeddedFleet(withFields(opts.embedded, { blockSize: opts.config.blockSize, model: opts.config.models[0] }));
      input.workers = fleet.workers;
    }
    router = await createRouter(input);
    const server = await listenUws(router, { host: opts.config.host, port: opts.config.port });
    const r = router;
    const f = fleet;
    let closing: Promise<void> | undefined;
    return {
      router: r,
      server,
      fleet: f,
      banner: () => banner(server.url, r, f),
      close() {
        closing ??= (async () => {
          await server.close();
          await r.close();
          await f?.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await router?.close();
    await fleet?.close();
    throw err;
  }
}

function banner(url: string, router: Router, fleet: EmbeddedFleet | undefined): string {
  const model = router.config.models[0];
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Tell me about KV caches.' }], max_tokens: 48, stream: true });
  const fleetLine = fleet ? fleet.describe() : `${router.registry.list().length} workers from the configuration`;
  return [
    `kvroute listening on ${url}`,
    `  fleet    ${fleetLine}`,
    `  OpenAI   ${url}/v1/completions  ${url}/v1/chat/completions  ${url}/v1/models`,
    `  explain  ${url}/v1/route (POST a request body: the routing decision, nothing runs)`,
    `  metrics  ${url}/metrics   health ${url}/health   live ${url}/live   admin ${url}/admin/workers`,
    '',
    'Try it (the x-kvroute-* response headers name the prefill and decode workers and the overlap):',
    `  curl -N -i ${url}/v1/chat/completions -H 'content-type: application/json' -d '${body}'`,
    '',
    'Ctrl-C stops everything.',
  ].join('\n');
}
