// startServer's listeners: without an admin token, a router listening beyond loopback keeps its
// admin API off that listener and serves it on 127.0.0.1 alone.
import { afterEach, describe, expect, it } from 'vitest';
import { parseRouterConfig } from '../../../src/server/config/config.js';
import { startServer, type StartedServer } from '../../../src/server/app/start.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';

let started: StartedServer | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});

const embedded = { prefill: 0, decode: 1, style: 'vllm' as const, speedup: 100 };

describe('startServer', () => {
  it('serves the admin API on its own loopback listener when listening beyond loopback without a token', async () => {
    started = await startServer({ config: parseRouterConfig({ host: '0.0.0.0', port: 0, health: { intervalMs: 0 }, logLevel: 'silent' }), embedded });
    const publicUrl = started.server.url.replace('0.0.0.0', '127.0.0.1');
    const refused = await fetch(`${publicUrl}/admin/workers`);
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('admin_not_here');
    expect(body.error.message).toContain(`${started.adminServer!.url}/admin`);
    expect(refused.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // A POST is refused before its body is read.
    expect((await fetch(`${publicUrl}/admin/workers`, { method: 'POST', body: '{"id": 9}' })).status).toBe(403);
    // The public routes stay on the public listener, the admin API alone on the loopback one.
    expect((await fetch(`${publicUrl}/v1/models`)).status).toBe(200);
    expect(started.adminServer!.host).toBe('127.0.0.1');
    const list = await fetch(`${started.adminServer!.url}/admin/workers`);
    expect(list.status).toBe(200);
    expect(((await list.json()) as { workers: unknown[] }).workers).toHaveLength(1);
    expect((await fetch(`${started.adminServer!.url}/v1/models`)).status).toBe(404);
    expect(started.banner()).toContain(`admin ${started.adminServer!.url}/admin/workers`);
  });

  it('keeps one listener when it listens on loopback, or when a token guards the admin API', async () => {
    started = await startServer({ config: parseRouterConfig({ port: 0, health: { intervalMs: 0 }, logLevel: 'silent' }), embedded });
    expect(started.adminServer).toBeUndefined();
    expect((await fetch(`${started.server.url}/admin/workers`)).status).toBe(200);
    await started.close();
    started = await startServer({
      config: parseRouterConfig({ host: '0.0.0.0', port: 0, adminToken: 's3cret', health: { intervalMs: 0 }, logLevel: 'silent' }),
      embedded,
    });
    expect(started.adminServer).toBeUndefined();
    const url = started.server.url.replace('0.0.0.0', '127.0.0.1');
    expect((await fetch(`${url}/admin/workers`)).status).toBe(401);
    expect((await fetch(`${url}/admin/workers`, { headers: { authorization: 'Bearer s3cret' } })).status).toBe(200);
  });

  it('with allowEmptyFleet and no workers, answers 503 no_eligible_worker (and /health 503) until a worker added through the admin API serves', async () => {
    let worker: SimWorker | undefined;
    try {
      started = await startServer({ config: parseRouterConfig({ port: 0, allowEmptyFleet: true, health: { intervalMs: 0 }, logLevel: 'silent' }) });
      const url = started.server.url;
      const ask = () =>
        fetch(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'kvroute-sim', prompt: 'hello there', max_tokens: 2 }),
        });
      const refused = await ask();
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('no_eligible_worker');
      expect((await fetch(`${url}/health`)).status).toBe(503);
      worker = await startSimWorker({ id: 5, host: '127.0.0.1', model: 'kvroute-sim' });
      const added = await fetch(`${url}/admin/workers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 5, baseUrl: worker.url }),
      });
      expect(added.status).toBe(201);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const served = await ask();
      expect(served.status).toBe(200);
      expect(served.headers.get('x-kvroute-decode-worker')).toBe('5');
    } finally {
      await started?.close();
      started = undefined;
      await worker?.close();
    }
  });
});
