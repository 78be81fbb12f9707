// A restarted engine is never credited with its dead process's blocks, whichever way it restarts:
// killed and started again on the same address behind a quiet router (the event stream's reconnect
// probe sees it), or restarted without its sockets ever dropping (its /metrics start time does).
// The first request after the restart must not go to it on stale credit.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import { startSimWorker, type SimWorker, type SimWorkerOptions } from '../../../src/sim/worker/worker.js';
import { metricSum, prompt, waitFor } from '../helpers/router.js';

const MODEL = 'kvroute-sim';
const BS = 16;
const engine = { blockSize: BS, kvBlocks: 2048, speedup: 200 };
const shared = { host: '127.0.0.1', model: MODEL, engine };

let opened: { router?: Router; server?: RunningServer; workers: SimWorker[] } = { workers: [] };
afterEach(async () => {
  await opened.server?.close();
  await opened.router?.close();
  await Promise.all(opened.workers.map((w) => w.close()));
  opened = { workers: [] };
});

const portOf = (url: string) => Number(/:(\d+)$/.exec(url.replace(/\/$/, ''))![1]);

async function startFleet(): Promise<{ url: string; router: Router; workers: SimWorker[] }> {
  const workers = [await startSimWorker({ id: 1, ...shared }), await startSimWorker({ id: 2, ...shared })];
  opened.workers.push(...workers);
  const router = await createRouter({
    port: 0,
    blockSize: BS,
    model: MODEL,
    seed: 7,
    health: { intervalMs: 0 },
    workers: workers.map((w) => ({ id: w.id, baseUrl: w.url, kvEvents: w.eventsEndpoint, replayEndpoint: w.replayEndpoint })),
  });
  opened.router = router;
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  opened.server = server;
  for (const w of workers)
    await waitFor(async () => (await metricSum(server.url, 'kvroute_kv_event_stream_joins_total', `worker="${w.id}"`)) >= 1, `worker ${w.id} to join`);
  return { url: server.url, router, workers };
}

/** The overlap (blocks) the router would credit each worker with for `text`. */
async function overlaps(url: string, text: string): Promise<Map<number, number>> {
  const res = await fetch(`${url}/v1/route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: text }),
  });
  const body = (await res.json()) as { decode: { candidates: Array<{ worker: number; overlap_blocks: number }> } };
  return new Map(body.decode.candidates.map((c) => [c.worker, c.overlap_blocks]));
}

async function complete(url: string, text: string): Promise<{ worker: number; overlap: number }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: text, max_tokens: 2 }),
  });
  expect(res.status).toBe(200);
  await res.text();
  return { worker: Number(res.headers.get('x-kvroute-decode-worker')), overlap: Number(res.headers.get('x-kvroute-overlap-blocks')) };
}

/** Serves `text` once and waits until the router credits its worker with the prompt's blocks. */
async function cached(url: string, text: string): Promise<number> {
  const { worker } = await complete(url, text);
  await waitFor(async () => ((await overlaps(url, text)).get(worker) ?? 0) >= 60, `worker ${worker}'s blocks to reach the index`);
  return worker;
}

/** Starts the worker again on its ports, once the closed sockets have released them. */
async function restartOn(options: SimWorkerOptions): Promise<SimWorker> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startSimWorker(options);
    } catch (err) {
      if (attempt >= 100 || !/in use/i.test((err as Error).message)) throw err;
      console.log('retry', (err as Error).message);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Serves `text` on the worker itself, on a connection the client closes (a connection the engine
 * closed would hold its port in TIME_WAIT for a minute, and the restarted worker could not bind it).
 */
async function servedDirectly(w: SimWorker, text: string): Promise<void> {
  const agent = new Agent({ keepAlive: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const req = request(`${w.url}/v1/completions`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`the worker answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: MODEL, prompt: text, max_tokens: 2 }));
    });
  } finally {
    agent.destroy();
  }
}

describe('a restarted engine gets no credit for its old blocks', () => {
  it('killed and restarted on the same address behind a quiet router: cleared before any request, and the first one is not sent there on stale credit', async () => {
    const { url, workers } = await startFleet();
    const text = prompt(1024, 1); // 64 blocks
    const old = workers[0];
    const id = old.id;
    await servedDirectly(old, text);
    await waitFor(async () => ((await overlaps(url, text)).get(id) ?? 0) >= 60, `worker ${id}'s blocks to reach the index`);
    // The process dies and a new one binds the same ports (no request in between).
    await old.close();
    opened.workers.splice(opened.workers.indexOf(old), 1);
    const options: SimWorkerOptions = { id, ...shared, httpPort: portOf(old.url), zmqPort: portOf(old.eventsEndpoint), replayPort: portOf(old.replayEndpoint) };
    const again = await restartOn(options);
    opened.workers.push(again);
    await waitFor(async () => ((await overlaps(url, text)).get(id) ?? 0) === 0, `the router to stop crediting worker ${id}`);
    expect(await metricSum(url, 'kvroute_kv_event_restarts_total', `worker="${id}"`)).toBe(1);
    const first = await complete(url, text);
    expect(first.overlap).toBe(0);
  });

  it('restarted without its sockets dropping: the new process_start_time_seconds clears it at the next health check', async () => {
    const { url, router, workers } = await startFleet();
    await router.checkHealth(); // each engine's start time, as it is now
    const text = prompt(1024, 2);
    const id = await cached(url, text);
    await workers.find((w) => w.id === id)!.faults.restart();
    expect((await overlaps(url, text)).get(id)).toBeGreaterThanOrEqual(60); // nothing told the router yet
    await router.checkHealth();
    expect((await overlaps(url, text)).get(id)).toBe(0);
    expect((await complete(url, text)).overlap).toBe(0);
  });
});
