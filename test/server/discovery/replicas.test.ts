// Router replicas over NATS with Kubernetes discovery: each replica discovers the pods itself
// (same worker ids, so their shared bookings agree) and discovered workers never travel as fleet
// changes, while an admin change of a static worker still does.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import type { RouterConfigInput } from '../../../src/server/config/config.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';
import { workerIdOf } from '../../../src/server/discovery/pod-worker.js';
import { NATS_SKIP_REASON, startNatsServer, type NatsServer } from '../../helpers/nats.js';
import { waitFor } from '../helpers/router.js';
import { enginePod, FakeKube } from './fake-kube.js';

const MODEL = 'kvroute-sim';

describe.skipIf(NATS_SKIP_REASON !== null)('Kubernetes discovery on router replicas', () => {
  let nats: NatsServer;
  let kube: FakeKube;
  let sims: SimWorker[];
  let replicas: Array<{ router: Router; server: RunningServer; url: string }>;

  beforeEach(async () => {
    nats = await startNatsServer();
    kube = new FakeKube();
    await kube.start();
    sims = [];
    replicas = [];
  });

  afterEach(async () => {
    for (const r of replicas) {
      await r.server.close();
      await r.router.close();
    }
    await Promise.all(sims.map((s) => s.close()));
    await kube.stop();
    await nats.close();
  });

  async function replica(id: string, staticUrl: string): Promise<{ router: Router; url: string }> {
    const config: RouterConfigInput = {
      blockSize: 16,
      model: MODEL,
      health: { intervalMs: 0 },
      workers: [{ id: 1, baseUrl: staticUrl }],
      replicas: { nats: nats.url, id, heartbeatMs: 100, ttlMs: 600, warmStart: false },
      discovery: { kubernetes: { selector: 'app=vllm', kubeconfig: kube.kubeconfig(), retryBaseMs: 20, retryMaxMs: 200 } },
    };
    const router = await createRouter(config);
    const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
    replicas.push({ router, server, url: server.url });
    return { router, url: server.url };
  }

  it('each replica discovers the pod under the same id; an admin drain of it stays on its replica, one of a static worker is shared', async () => {
    for (let i = 0; i < 2; i++) sims.push(await startSimWorker({ id: i, model: MODEL, engine: { blockSize: 16, kvBlocks: 1024, speedup: 200 } }));
    const url = new URL(sims[0].url);
    kube.put(enginePod({ name: 'vllm-0', ip: url.hostname, httpPort: Number(url.port) }));
    const a = await replica('a', sims[1].url);
    const b = await replica('b', sims[1].url);
    const id = workerIdOf('uid-vllm-0');
    const state = (r: Router, w: number) => r.registry.list().find((s) => s.id === w)?.state;
    await waitFor(() => state(a.router, id) === 'healthy' && state(b.router, id) === 'healthy', 'both replicas to discover the pod');

    await fetch(`${a.url}/admin/workers/${id}/drain`, { method: 'POST' });
    await fetch(`${a.url}/admin/workers/1/drain`, { method: 'POST' });
    // The static worker's drain reaches B through the shared fleet; by then the discovered one's would have too.
    await waitFor(() => state(b.router, 1) === 'draining', "the static worker's drain to reach B");
    expect(state(a.router, id)).toBe('draining');
    expect(state(b.router, id)).toBe('healthy');

    kube.delete('llm', 'vllm-0');
    await waitFor(() => !a.router.registry.has(id) && !b.router.registry.has(id), 'both replicas to drop the worker');
    // Nothing brings it back as a static worker from the shared fleet.
    await new Promise((r) => setTimeout(r, 300));
    expect(a.router.registry.has(id) || b.router.registry.has(id)).toBe(false);
    expect(b.router.registry.list().map((w) => w.id)).toEqual([1]);
  });
});
