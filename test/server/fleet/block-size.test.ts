// A router whose block size differs from its engines' refuses every stored event they send, and
// routing silently falls back to load alone. That must be loud: one log line per worker (the first
// time, and when the engine's size changes), a /health detail and a metric naming both sizes.
import { afterEach, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';
import { captureLog } from '../../helpers/log-capture.js';
import { metricSum, prompt, waitFor } from '../helpers/router.js';

const MODEL = 'kvroute-sim';
let opened: { router?: Router; server?: RunningServer; worker?: SimWorker } = {};
afterEach(async () => {
  await opened.server?.close();
  await opened.router?.close();
  await opened.worker?.close();
  opened = {};
});

describe('a block size mismatch between router and engine', () => {
  it('is logged once per worker, shown in /health and in kvroute_kv_event_block_size_mismatch, naming both sizes', async () => {
    // vLLM's CPU attention takes multiples of 32 only: an engine at 32 behind a router left at 16.
    const worker = await startSimWorker({ id: 4, host: '127.0.0.1', model: MODEL, engine: { blockSize: 32, kvBlocks: 1024, speedup: 200 } });
    opened.worker = worker;
    const log = captureLog('info');
    const router = await createRouter(
      {
        port: 0,
        blockSize: 16,
        model: MODEL,
        health: { intervalMs: 0 },
        workers: [{ id: 4, baseUrl: worker.url, kvEvents: worker.eventsEndpoint, replayEndpoint: worker.replayEndpoint }],
      },
      { logger: log.logger },
    );
    opened.router = router;
    const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
    opened.server = server;
    const url = server.url;
    await waitFor(async () => (await metricSum(url, 'kvroute_kv_event_stream_joins_total', 'worker="4"')) >= 1, 'the event stream to join');
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: prompt(512, i), max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    await waitFor(async () => (await metricSum(url, 'kvroute_kv_events_rejected_total', 'reason="blockSize"')) >= 3, 'the refused events to be counted');
    const warnings = log.lines().filter((l) => /block size/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ worker: 4, engine_block_size: 32, router_block_size: 16 });
    expect(warnings[0].msg).toMatch(/the engine's block size is 32, the router's 16/);
    const health = (await (await fetch(`${url}/health`)).json()) as { status: string; kv_events?: unknown };
    expect(health.status).toBe('ready');
    expect(health.kv_events).toEqual([{ worker: 4, problem: 'block_size_mismatch', engine_block_size: 32, router_block_size: 16 }]);
    expect(await metricSum(url, 'kvroute_kv_event_block_size_mismatch', 'worker="4",engine_block_size="32",router_block_size="16"')).toBe(1);
  });
});
