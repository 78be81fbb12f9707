// Faults as the server shows them: a worker whose port refuses connections costs the client
// nothing (its legs are retried on another worker), is ejected from selection at once, and comes
// back when a health check passes; every step shows in /admin/workers, /metrics and the log.
import { afterEach, describe, expect, it } from 'vitest';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';
import { captureLog } from '../../helpers/log-capture.js';
import { BLOCK_SIZE, MODEL, bookedLoad, metricSum, prompt, startTestRouter, waitForNoLoad, type TestRouter } from '../helpers/router.js';

let t: TestRouter | undefined;
let revived: SimWorker | undefined;
afterEach(async () => {
  await revived?.close();
  revived = undefined;
  await t?.close();
  t = undefined;
});

async function complete(url: string, body: object): Promise<{ status: number; worker: string | null; text: string }> {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, worker: res.headers.get('x-kvroute-decode-worker'), text: await res.text() };
}

async function adminWorker(url: string, id: number): Promise<Record<string, unknown>> {
  return ((await (await fetch(`${url}/admin/workers/${id}`)).json()) as { worker: Record<string, unknown> }).worker;
}

describe('a worker that refuses connections', () => {
  it('costs the client nothing: its leg goes to another worker, it is ejected at once, and /admin/workers, /metrics and the log say so', async () => {
    const log = captureLog('info');
    t = await startTestRouter({ decode: 3, logger: log.logger, config: { routing: { policy: 'round_robin' } } });
    await t.fleet.sim[1].close(); // its port now refuses connections; nothing was kept alive to it
    const workers: string[] = [];
    for (let i = 0; i < 9; i++) {
      const r = await complete(t.url, { prompt: prompt(40, i), max_tokens: 3, stream: i % 2 === 0 });
      expect(r.status).toBe(200);
      workers.push(r.worker!);
    }
    expect(workers).not.toContain('1');
    // Round robin reached worker 1 once; the refusal ejected it, so no later request paid a retry.
    expect(await metricSum(t.url, 'kvroute_leg_retries_total', 'worker="1",reason="engine_unreachable"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_leg_retries_total')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_worker_ejections_total', 'pool="decode",worker="1",reason="connect_failure"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_worker_ejected', 'worker="1"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_worker_ejected')).toBe(1);
    const w1 = await adminWorker(t.url, 1);
    expect(w1).toMatchObject({ state: 'healthy', inSelection: false, ejected: true, ejection: { ejections: 1, lastReason: 'connect_failure' } });
    expect(w1.ejection).toHaveProperty('ejectedUntil');
    expect(await adminWorker(t.url, 0)).toMatchObject({ inSelection: true, ejected: false });
    expect(await adminWorker(t.url, 0)).not.toHaveProperty('ejection');
    const lines = log.lines();
    expect(lines.find((l) => l.msg === 'leg sent to another worker: its engine never got it')).toMatchObject({
      level: 40,
      component: 'routing',
      pool: 'decode',
      worker: 1,
      reason: 'engine_unreachable',
      attempt: 1,
      engine: t.fleet.workers[1].baseUrl,
    });
    expect(lines.find((l) => l.msg === 'worker ejected: out of selection after consecutive failures')).toMatchObject({
      level: 40,
      pool: 'decode',
      worker: 1,
      reason: 'connect_failure',
      ejection_ms: 30_000,
      ejections: 1,
    });
    await waitForNoLoad(t.url);

    // The worker comes back on its port: the next passed health check puts it back in selection.
    const port = Number(new URL(t.fleet.workers[1].baseUrl).port);
    revived = await startSimWorker({
      id: 1,
      httpPort: port,
      zmqPort: 0,
      replayPort: 0,
      engine: { blockSize: BLOCK_SIZE, kvBlocks: 2048, speedup: 200 },
      model: MODEL,
    });
    await t.router.checkHealth();
    expect(await adminWorker(t.url, 1)).toMatchObject({ inSelection: true, ejected: false, ejection: { ejections: 1, lastReason: 'connect_failure' } });
    expect(await metricSum(t.url, 'kvroute_worker_ejected')).toBe(0);
    expect(log.lines().find((l) => l.msg === 'ejected worker back in selection')).toMatchObject({ level: 30, pool: 'decode', worker: 1, why: 'health_check' });
    const back: string[] = [];
    for (let i = 0; i < 3; i++) back.push((await complete(t.url, { prompt: prompt(40, 100 + i), max_tokens: 3 })).worker!);
    expect(back.sort()).toEqual(['0', '1', '2']);
    expect(await bookedLoad(t.url)).toEqual({ requests: 0, prefillTokens: 0, decodeBlocks: 0 });
  });

  it('with maxRetries 0 and ejection off, each request that reaches it fails (503 with Retry-After: it never ran) and the next ones still pay for it', async () => {
    t = await startTestRouter({ decode: 2, config: { routing: { policy: 'round_robin' }, maxRetries: 0, outlierDetection: { enabled: false } } });
    await t.fleet.sim[1].close();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await complete(t.url, { prompt: prompt(40, i), max_tokens: 3 })).status);
    expect(statuses.filter((s) => s === 503)).toHaveLength(2);
    expect(await metricSum(t.url, 'kvroute_leg_retries_total')).toBe(0);
    expect(await metricSum(t.url, 'kvroute_worker_ejections_total')).toBe(0);
    expect(await adminWorker(t.url, 1)).toMatchObject({ inSelection: true, ejected: false });
    await waitForNoLoad(t.url);
  });

  it('ejects a worker after consecutive 5xx answers (never retried), and a passed health check does not bring it back', async () => {
    t = await startTestRouter({ decode: 2, config: { routing: { policy: 'round_robin' }, outlierDetection: { consecutive5xx: 2 } } });
    t.fleet.sim[0].faults.failNext(2);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await complete(t.url, { prompt: prompt(40, i), max_tokens: 3 })).status);
    expect(statuses.filter((s) => s === 502)).toHaveLength(2);
    expect(await metricSum(t.url, 'kvroute_leg_retries_total')).toBe(0);
    expect(await metricSum(t.url, 'kvroute_worker_ejections_total', 'worker="0",reason="server_error"')).toBe(1);
    await t.router.checkHealth();
    expect(await adminWorker(t.url, 0)).toMatchObject({ state: 'healthy', inSelection: false, ejected: true, ejection: { lastReason: 'server_error' } });
    await waitForNoLoad(t.url);
  });
});
