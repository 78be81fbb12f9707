// Keep-alive with the Python clients users load-test routers with (aiohttp, as `vllm bench serve`
// uses it, and httpx), each keeping idle connections 60 s, idle across uWebSockets.js's ~10 s
// close: the second request must not be lost. They run from a virtualenv with pinned versions
// (.ci/run makes it: KVROUTE_PYTHON_CLIENTS names its python); outside CI the test skips without it.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';

const SCRIPT = fileURLToPath(new URL('../../fixtures/python/idle_clients.py', import.meta.url));
const PYTHON = process.env.KVROUTE_PYTHON_CLIENTS;
const available = PYTHON !== undefined && existsSync(PYTHON);
if (!available && process.env.CI) throw new Error('KVROUTE_PYTHON_CLIENTS must name a python with aiohttp and httpx under CI (.ci/run makes one)');
const IDLE_S = 13;

interface ClientResult {
  client: string;
  first: number;
  second: number | null;
  error?: string;
  keepAlive: string | null;
  connections?: number;
}

let worker: SimWorker;
let router: Router;
let server: RunningServer;

describe.skipIf(!available)('Python clients idle across the router keep-alive close', () => {
  beforeAll(async () => {
    worker = await startSimWorker({ id: 1, host: '127.0.0.1', model: 'kvroute-sim', engine: { blockSize: 16, kvBlocks: 1024, speedup: 200 } });
    router = await createRouter({ port: 0, blockSize: 16, model: 'kvroute-sim', health: { intervalMs: 0 }, workers: [{ id: 1, baseUrl: worker.url }] });
    server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await router?.close();
    await worker?.close();
  });

  it('loses no request after idling 13 s with a 60 s pool (aiohttp, httpx)', { timeout: 60_000 }, async () => {
    const { stdout } = await promisify(execFile)(PYTHON as string, [SCRIPT, server.url, String(IDLE_S)], { timeout: 50_000 });
    const results = JSON.parse(stdout) as ClientResult[];
    expect(results.map((r) => r.client)).toEqual([expect.stringMatching(/^aiohttp /), expect.stringMatching(/^httpx /)]);
    for (const r of results) {
      expect(r, r.client).toMatchObject({ first: 200, second: 200, keepAlive: 'timeout=5' });
      expect(r.error, r.client).toBeUndefined();
    }
  });
});
