// Malformed or hostile input end to end (uWebSockets.js frontend, simulated fleet): deep JSON, huge
// max_tokens, a refused admin call, and what an error answer may say about the engines behind it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLog, type CapturedLog } from '../../helpers/log-capture.js';
import { freePort } from '../../helpers/processes.js';
import { bookedLoad, MODEL, metricSum, prompt, startTestRouter, waitFor, waitForNoLoad, type TestRouter } from '../helpers/router.js';

type ErrorBody = { error: { message: string; type: string; code: string } };

async function post(url: string, body: string | object, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: (text ? JSON.parse(text) : {}) as ErrorBody & Record<string, unknown> };
}

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('input hygiene', () => {
  let t: TestRouter;
  let log: CapturedLog;
  beforeAll(async () => {
    log = captureLog('info');
    t = await startTestRouter({ prefill: 1, decode: 2, logger: log.logger });
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['a 100,000-deep token-id prompt (the native scan path)', `{"model":"${MODEL}","prompt":${deep(100_000)}}`, '/v1/completions'],
    ['a 100,000-deep field beside a text prompt', `{"prompt":"hello","extra":${deep(100_000)}}`, '/v1/completions'],
    ['a 65-deep field', `{"prompt":"hello","extra":${deep(64)}}`, '/v1/completions'],
    ['a 100,000-deep chat field', `{"messages":[{"role":"user","content":"hi"}],"metadata":${deep(100_000)}}`, '/v1/chat/completions'],
  ])('refuses %s with 400 invalid_json, before any routing', async (_what, body, path) => {
    const r = await post(`${t.url}${path}`, body);
    expect(r.status).toBe(400);
    expect(r.json.error).toEqual({
      message: 'request body nests arrays and objects more than 64 levels deep',
      type: 'invalid_request_error',
      code: 'invalid_json',
    });
    expect(await metricSum(t.url, 'kvroute_fallbacks_to_aggregated_total')).toBe(0);
    expect(await metricSum(t.url, 'kvroute_requests_served_total')).toBe(0);
  });

  it('takes nesting up to the limit', async () => {
    // 64 levels: the body (1) and 63 arrays in a field the engine ignores.
    const r = await post(`${t.url}/v1/completions`, `{"prompt":"hello","max_tokens":2,"extra":${deep(63)}}`);
    expect(r.status).toBe(200);
  });

  it('refuses max_tokens over the cap with a 400 naming it, and a non-integer as a non-integer', async () => {
    const over = await post(`${t.url}/v1/completions`, { prompt: 'x', max_tokens: 1e20 });
    expect(over.status).toBe(400);
    expect(over.json.error).toEqual({
      message: "'max_tokens' must be at most 1048576 (this router's max tokens limit), got 100000000000000000000",
      type: 'invalid_request_error',
      code: 'max_tokens_too_large',
    });
    const chat = await post(`${t.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 2_000_000 });
    expect(chat.json.error.message).toBe("'max_completion_tokens' must be at most 1048576 (this router's max tokens limit), got 2000000");
    const fraction = await post(`${t.url}/v1/completions`, { prompt: 'x', max_tokens: 1.5 });
    expect(fraction.json.error.message).toBe("'max_tokens' must be a positive integer, got 1.5");
  });

  it("states the router's own body limit in its 413", async () => {
    const r = await post(`${t.url}/v1/completions`, { prompt: prompt(5 * 1024 * 1024) });
    expect(r.status).toBe(413);
    expect(r.json.error.message).toBe("request body exceeds the router's limit of 4194304 bytes (--max-body-bytes)");
  });

  it('names an unreachable engine by its worker id; its URL and the system error text go to the log only', async () => {
    const port = await freePort(); // nothing listens there
    const added = await post(`${t.url}/admin/workers`, { id: 99, role: 'decode', baseUrl: `http://127.0.0.1:${port}` });
    expect(added.status).toBe(201);
    try {
      const r = await post(`${t.url}/v1/completions`, { prompt: 'hello', max_tokens: 2 }, { 'x-worker-instance-id': '99', 'x-request-id': 'req-unreachable' });
      // The engine never got it (the client pinned the worker, so no failover): 503, safe to send again.
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.json.error).toEqual({
        message: 'engine unreachable (worker 99): no engine got the request, it may be sent again',
        type: 'service_unavailable',
        code: 'engine_unreachable',
      });
      expect(r.text).not.toContain(String(port));
      expect(r.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
      const line = log.lines().find((l) => l.request_id === 'req-unreachable');
      expect(line).toMatchObject({
        level: 40,
        status: 503,
        code: 'engine_unreachable',
        worker: 99,
        engine: `http://127.0.0.1:${port}`,
        failure: 'engine_unreachable',
      });
      expect(String(line?.detail)).toMatch(/ECONNREFUSED/);
    } finally {
      await fetch(`${t.url}/admin/workers/99`, { method: 'DELETE' });
    }
  });

  it('counts a non-streamed request whose client left as a client disconnect, and frees its booking', async () => {
    const before = await metricSum(t.url, 'kvroute_client_disconnects_total');
    for (const w of t.fleet.sim) w.faults.hang(true);
    try {
      const ac = new AbortController();
      const pending = fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        body: JSON.stringify({ prompt: prompt(40, 3), max_tokens: 4 }),
        signal: ac.signal,
      }).catch(() => 'aborted');
      await waitFor(async () => (await bookedLoad(t.url)).requests > 0, 'the request to be booked');
      ac.abort();
      expect(await pending).toBe('aborted');
      await waitFor(async () => (await metricSum(t.url, 'kvroute_client_disconnects_total')) === before + 1, 'the disconnect to be counted');
    } finally {
      for (const w of t.fleet.sim) w.faults.hang(false);
    }
    await waitForNoLoad(t.url);
  });

  it('adds no ghost when POST /admin/workers is refused, and never shows credentials', async () => {
    const workersBefore = await metricSum(t.url, 'kvroute_workers');
    const healthBefore = (await (await fetch(`${t.url}/health`)).json()) as { workers: number };
    const refusedCases = [
      { id: 50, role: 'decode', baseUrl: 'http://admin:hunter2-secret@127.0.0.1:9' },
      { id: 51, role: 'decode', baseUrl: 'http://127.0.0.1:9?x=1' },
      { id: 52, role: 'decode', baseUrl: 'http://127.0.0.1:9', bootstrap: { host: 'h', port: 0 } },
      { id: 53, role: 'boss', baseUrl: 'http://127.0.0.1:9' },
    ];
    for (const body of refusedCases) {
      const r = await post(`${t.url}/admin/workers`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.text).not.toContain('hunter2');
    }
    const list = await (await fetch(`${t.url}/admin/workers`)).text();
    expect(list).not.toMatch(/"id":5[0-3]\b/);
    expect(list).not.toContain('hunter2');
    expect(await metricSum(t.url, 'kvroute_workers')).toBe(workersBefore);
    expect(((await (await fetch(`${t.url}/health`)).json()) as { workers: number }).workers).toBe(healthBefore.workers);
    expect(log.text()).not.toContain('hunter2');
    const credentials = await post(`${t.url}/admin/workers`, refusedCases[0]);
    expect(credentials.json.error.message).toBe("worker.baseUrl must not carry credentials (user:password@), got 'http://***@127.0.0.1:9'");
  });
});
