// What the router logs, read back from kvroute's own logger: state changes (workers, engine
// restarts, KV event gaps), 5xx answers with their request id; nothing per request at info level.
import { afterEach, describe, expect, it } from 'vitest';
import { captureLog, type CapturedLog } from '../../helpers/log-capture.js';
import { prompt, startTestRouter, waitFor, waitForEventStreams, type TestRouter } from '../helpers/router.js';

let t: TestRouter | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function complete(url: string, body: object, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await res.text();
  return res.status;
}

const messages = (log: CapturedLog) => log.lines().map((l) => l.msg);

describe('router logs', () => {
  it('writes nothing per request at info, and one line per request at debug', async () => {
    const info = captureLog('info');
    t = await startTestRouter({ decode: 2, logger: info.logger });
    const before = info.lines().length;
    for (let i = 0; i < 10; i++) expect(await complete(t.url, { prompt: prompt(40, i), max_tokens: 3, stream: i % 2 === 0 })).toBe(200);
    // The fleet may log on its own meanwhile (a slow health answer on a loaded machine, an event
    // stream connecting): only lines about the requests count here.
    const aboutRequests = info
      .lines()
      .slice(before)
      .filter((l) => l.msg === 'request' || l.request_id !== undefined);
    expect(aboutRequests).toEqual([]);
    await t.close();

    const debug = captureLog('debug');
    t = await startTestRouter({ decode: 2, logger: debug.logger });
    expect(await complete(t.url, { prompt: 'hello', max_tokens: 3, stream: true }, { 'x-request-id': 'dbg-1' })).toBe(200);
    expect(await complete(t.url, { prompt: 'hello', max_tokens: 3 }, { 'x-request-id': 'dbg-2' })).toBe(200);
    await waitFor(() => debug.lines().filter((l) => l.msg === 'request').length === 2, 'two request lines');
    const lines = debug.lines().filter((l) => l.msg === 'request');
    expect(lines.map((l) => l.request_id)).toEqual(['dbg-1', 'dbg-2']);
    expect(lines[0]).toMatchObject({ level: 20, route: '/v1/completions', status: 200, mode: 'aggregated' });
  });

  it('logs a 5xx answer with its request id, the worker and the engine URL', async () => {
    const log = captureLog('info');
    t = await startTestRouter({ decode: 1, logger: log.logger });
    t.fleet.sim[0].faults.failNext(1);
    expect(await complete(t.url, { prompt: 'hello', max_tokens: 3 }, { 'x-request-id': 'fails-1' })).toBe(502);
    const line = log.lines().find((l) => l.request_id === 'fails-1');
    expect(line).toMatchObject({
      level: 40,
      status: 502,
      code: 'engine_failed',
      worker: 0,
      engine: t.fleet.workers[0].baseUrl,
      failure: 'engine_rejected',
      msg: 'engine failed (worker 0): injected failure (fault switch fail_next)',
    });
  });

  it('logs workers leaving and rejoining selection on health checks', async () => {
    const log = captureLog('info');
    t = await startTestRouter({ decode: 2, logger: log.logger, config: { health: { intervalMs: 0, timeoutMs: 200 } } });
    expect(
      log
        .lines()
        .filter((l) => l.msg === 'worker added')
        .map((l) => l.worker),
    ).toEqual([0, 1]);
    t.fleet.sim[1].faults.hang(true);
    await t.router.checkHealth();
    expect(log.lines().find((l) => l.msg === 'worker unhealthy: out of selection')).toMatchObject({
      level: 40,
      worker: 1,
      component: 'fleet',
      error: 'GET /health timed out after 200 ms',
    });
    t.fleet.sim[1].faults.hang(false);
    await t.router.checkHealth();
    expect(log.lines().find((l) => l.msg === 'worker healthy again')).toMatchObject({ level: 30, worker: 1, in_selection: true });
  });

  it('logs KV event gaps, their replay and engine restarts', async () => {
    const log = captureLog('info');
    t = await startTestRouter({ decode: 1, logger: log.logger });
    await waitForEventStreams(t);
    const worker = t.fleet.sim[0];
    expect(await complete(t.url, { prompt: prompt(64, 1), max_tokens: 2 })).toBe(200);
    worker.faults.dropEvents(1);
    expect(await complete(t.url, { prompt: prompt(64, 2), max_tokens: 2 })).toBe(200);
    expect(await complete(t.url, { prompt: prompt(64, 3), max_tokens: 2 })).toBe(200);
    await waitFor(() => messages(log).includes('KV events: gap repaired from the replay'), 'the gap to be repaired');
    expect(log.lines().find((l) => l.msg === 'KV events: sequence gap, replaying the missing batches')).toMatchObject({
      level: 40,
      worker: 0,
      dp_rank: 0,
      component: 'kv-events',
    });
    await worker.faults.restart();
    expect(await complete(t.url, { prompt: prompt(64, 4), max_tokens: 2 })).toBe(200);
    await waitFor(() => messages(log).some((m) => m.startsWith('engine restarted')), 'the restart to be seen');
  });
});
