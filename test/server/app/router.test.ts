// The router's HTTP surface end to end (uWebSockets.js frontend, simulated fleet): every bad input
// gets its OpenAI-style error, the side endpoints answer, the admin API and health checks move
// workers in and out of selection, and the prefill router follows the prefill pool.
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, metricSum, prompt, startTestRouter, waitFor, waitForEventStreams, waitForNoLoad, type TestRouter } from '../helpers/router.js';

type ErrorBody = { error: { message: string; type: string; code: string } };

async function post(url: string, body: string | object, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: (text ? JSON.parse(text) : {}) as Record<string, any> };
}

describe('router HTTP surface', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 1, decode: 2, style: 'vllm', config: { maxBodyBytes: 4096, adminToken: 'admin-secret' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const completions = () => `${t.url}/v1/completions`;

  it.each([
    ['malformed JSON', '{"model": "kvroute-sim", "prompt": ', 400, 'invalid_json'],
    ['a JSON array', '[1, 2]', 400, 'invalid_json'],
    ['a prompt of the wrong type', { model: MODEL, prompt: 42 }, 400, 'invalid_prompt'],
    ['a negative token id', { model: MODEL, prompt: [1, -2, 3] }, 400, 'invalid_prompt'],
    ['stream as a string', { model: MODEL, prompt: 'x', stream: 'yes' }, 400, 'invalid_type'],
    ['max_tokens as a string', { model: MODEL, prompt: 'x', max_tokens: '8' }, 400, 'invalid_type'],
    ['a batch of prompts', { model: MODEL, prompt: ['a', 'b'] }, 400, 'batch_not_supported'],
    ['an unknown model', { model: 'gpt-4o', prompt: 'x' }, 404, 'model_not_found'],
    ['a body over the limit', { model: MODEL, prompt: prompt(8000) }, 413, 'payload_too_large'],
    ['a malformed routing hint', { model: MODEL, prompt: 'x', nvext: { backend_instance_id: 'w1' } }, 400, 'invalid_routing_hint'],
  ])('answers %s with %i %s', async (_what, body, status, code) => {
    const r = await post(completions(), body as string | object);
    expect(r.status).toBe(status);
    const err = r.json as ErrorBody;
    expect(err.error.code).toBe(code);
    expect(typeof err.error.message).toBe('string');
    expect(typeof err.error.type).toBe('string');
  });

  it('answers chat requests with bad messages with 400', async () => {
    const r = await post(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ content: 'no role' }] });
    expect(r.status).toBe(400);
    expect((r.json as ErrorBody).error.message).toMatch(/role/);
  });

  it('answers unknown routes with 404 and wrong methods with 405', async () => {
    expect((await fetch(`${t.url}/v2/nothing`)).status).toBe(404);
    const r = await fetch(completions());
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
  });

  it('echoes X-Request-Id, or generates one', async () => {
    const mine = await post(completions(), { model: MODEL, prompt: 'hello', max_tokens: 2 }, { 'x-request-id': 'my-request-1' });
    expect(mine.status).toBe(200);
    expect(mine.headers.get('x-request-id')).toBe('my-request-1');
    expect(mine.json.id).toContain('my-request-1'); // the engine saw the same id
    const generated = await post(completions(), { model: MODEL, prompt: 'hello', max_tokens: 2 });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const bad = await post(completions(), { model: MODEL, prompt: 'hello' }, { 'x-request-id': 'has space' });
    expect(bad.status).toBe(400);
  });

  it('puts the request id on error replies too, generated when the client sent none', async () => {
    const unknownModel = await post(completions(), { model: 'no-such-model', prompt: 'hello' });
    expect(unknownModel.status).toBe(404);
    expect(unknownModel.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const badJson = await fetch(completions(), { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'mine-2' }, body: '{bad' });
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('x-request-id')).toBe('mine-2');
    const badQuery = await post(`${t.url}/v1/route`, { model: MODEL, prompt: 7 });
    expect(badQuery.status).toBe(400);
    expect(badQuery.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('lists the models, says it is live and ready, and explains a routing decision without running it', async () => {
    const models = (await (await fetch(`${t.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
    expect((await fetch(`${t.url}/live`)).status).toBe(200);
    const health = await fetch(`${t.url}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('ready');

    const before = await metricSum(t.url, 'kvroute_requests_served_total');
    const r = await post(`${t.url}/v1/route`, { model: MODEL, messages: [{ role: 'user', content: prompt(100) }] });
    expect(r.status).toBe(200);
    expect(r.json.mode).toBe('disaggregated');
    expect(r.json.prefill.worker).toBe(0);
    expect(r.json.decode.candidates.length).toBe(2);
    expect(r.json.decode.candidates[0]).toEqual(
      expect.objectContaining({
        worker: expect.any(Number),
        overlap_blocks: expect.any(Number),
        lower_tier_blocks: { host: 0, disk: 0, external: 0 },
        prefill_blocks: expect.any(Number),
        decode_blocks: expect.any(Number),
        cost: expect.any(Number),
      }),
    );
    expect(r.json.prompt_tokens).toBeGreaterThan(100);
    expect(await metricSum(t.url, 'kvroute_requests_served_total')).toBe(before);
  });

  it('exposes kvroute_ metrics on its own registry', async () => {
    await post(completions(), { model: MODEL, prompt: prompt(64, 3), max_tokens: 2 });
    // The request's KV events reach the index over ZeroMQ after its answer: wait until they have.
    await waitFor(async () => (await metricSum(t.url, 'kvroute_kv_events_applied_total')) > 0, 'the KV events to be applied');
    const text = await (await fetch(`${t.url}/metrics`)).text();
    for (const name of [
      'kvroute_requests_total',
      'kvroute_time_to_first_token_seconds',
      'kvroute_inter_token_latency_seconds',
      'kvroute_input_tokens_total',
      'kvroute_output_tokens_total',
      'kvroute_kv_hit_rate',
      'kvroute_routing_overhead_microseconds_bucket{le="1",phase="total"}',
      'kvroute_worker_active_prefill_tokens',
      'kvroute_worker_active_decode_blocks',
      'kvroute_kv_events_applied_total',
      'kvroute_fallbacks_to_aggregated_total',
      'kvroute_backpressure_refusals_total',
      'kvroute_leg_retries_total',
      'kvroute_worker_ejections_total',
      'kvroute_worker_ejected',
    ]) {
      expect(text).toContain(name);
    }
    // The process's own metrics come from a registry of kvroute's too: prom-client's global one stays empty.
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(register.getMetricsAsArray()).toEqual([]);
    expect(await metricSum(t.url, 'kvroute_requests_total', 'status="200"')).toBeGreaterThan(0);
  });

  it('keeps the admin API behind its bearer token', async () => {
    expect((await fetch(`${t.url}/admin/workers`)).status).toBe(401);
    const auth = { authorization: 'Bearer admin-secret' };
    const list = (await (await fetch(`${t.url}/admin/workers`, { headers: auth })).json()) as { workers: Array<{ id: number; role: string; state: string }> };
    expect(list.workers.map((w) => [w.id, w.role, w.state])).toEqual([
      [0, 'prefill', 'healthy'],
      [1, 'decode', 'healthy'],
      [2, 'decode', 'healthy'],
    ]);
  });

  it('deactivates disaggregation when the prefill pool drains and reactivates it after', async () => {
    const auth = { authorization: 'Bearer admin-secret' };
    expect((await post(`${t.url}/admin/workers/0/drain`, {}, auth)).status).toBe(200);
    const agg = await post(completions(), { model: MODEL, prompt: 'while drained', max_tokens: 2 });
    expect(agg.status).toBe(200);
    expect(agg.headers.get('x-kvroute-mode')).toBe('aggregated');
    expect(agg.headers.get('x-kvroute-prefill-worker')).toBeNull();
    expect((await post(`${t.url}/admin/workers/0/activate`, {}, auth)).status).toBe(200);
    const disagg = await post(completions(), { model: MODEL, prompt: 'active again', max_tokens: 2 });
    expect(disagg.headers.get('x-kvroute-mode')).toBe('disaggregated');
    expect(disagg.headers.get('x-kvroute-prefill-worker')).toBe('0');
  });

  it('removes a worker at runtime and adds it back', async () => {
    const auth = { authorization: 'Bearer admin-secret' };
    const before = (await (await fetch(`${t.url}/admin/workers/2`, { headers: auth })).json()) as { worker: { baseUrl: string } };
    const removed = await fetch(`${t.url}/admin/workers/2`, { method: 'DELETE', headers: auth });
    expect(removed.status).toBe(200);
    for (let i = 0; i < 4; i++) {
      const r = await post(completions(), { model: MODEL, prompt: `only one decode worker ${i}`, max_tokens: 2 });
      expect(r.headers.get('x-kvroute-decode-worker')).toBe('1');
    }
    const pinned = await post(completions(), { model: MODEL, prompt: 'x', max_tokens: 2 }, { 'x-worker-instance-id': '2' });
    expect(pinned.status).toBeGreaterThanOrEqual(400);
    const sim = t.fleet.workers.find((w) => w.id === 2)!;
    const added = await post(`${t.url}/admin/workers`, sim, auth);
    expect(added.status).toBe(201);
    expect(added.json.worker).toMatchObject({ id: 2, role: 'decode', baseUrl: before.worker.baseUrl, state: 'healthy' });
    const back = await post(completions(), { model: MODEL, prompt: 'x', max_tokens: 2 }, { 'x-worker-instance-id': '2' });
    expect(back.status).toBe(200);
    expect(back.headers.get('x-kvroute-decode-worker')).toBe('2');
  });

  it('forwards chat requests that need the engine chat endpoint as they are', async () => {
    const r = await post(`${t.url}/v1/chat/completions`, {
      model: MODEL,
      messages: [{ role: 'user', content: 'json please' }],
      max_tokens: 3,
      response_format: { type: 'text' },
    });
    expect(r.status).toBe(200);
    expect(r.json.object).toBe('chat.completion');
    expect(r.json.usage.completion_tokens).toBe(3);
  });

  it('pins the decode worker on request (x-worker-instance-id)', async () => {
    for (const w of ['1', '2']) {
      const r = await post(completions(), { model: MODEL, prompt: 'pinned', max_tokens: 2 }, { 'x-worker-instance-id': w });
      expect(r.headers.get('x-kvroute-decode-worker')).toBe(w);
    }
  });

  it('answers 503 with Retry-After when no worker can serve', async () => {
    const auth = { authorization: 'Bearer admin-secret' };
    await post(`${t.url}/admin/workers/1/drain`, {}, auth);
    await post(`${t.url}/admin/workers/2/drain`, {}, auth);
    try {
      const r = await post(completions(), { model: MODEL, prompt: 'nobody', max_tokens: 2 });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect((r.json as ErrorBody).error).toMatchObject({ code: 'no_eligible_worker', type: 'service_unavailable' });
      expect((await fetch(`${t.url}/health`)).status).toBe(503);
    } finally {
      await post(`${t.url}/admin/workers/1/activate`, {}, auth);
      await post(`${t.url}/admin/workers/2/activate`, {}, auth);
    }
  });
});

describe('event ingestion and routing phases in /metrics', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 0, decode: 1 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts each routing phase, event gaps and their replays, and engine restarts, per worker', async () => {
    await waitForEventStreams(t);
    await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(64, 21), max_tokens: 2 });
    for (const phase of ['hash', 'match', 'select', 'total']) {
      expect(await metricSum(t.url, 'kvroute_routing_overhead_microseconds_count', `phase="${phase}"`), phase).toBeGreaterThan(0);
    }
    const worker = 'worker="0"';
    // The first request's events are in (so the stream was read): no gap so far.
    await waitFor(async () => (await metricSum(t.url, 'kvroute_kv_events_applied_total', worker)) > 0, 'the KV events to be applied');
    expect(await metricSum(t.url, 'kvroute_kv_event_gaps_total', worker)).toBe(0);
    // A lost event batch: the next one reveals the gap, which a replay repairs.
    t.fleet.sim[0].faults.dropEvents(1);
    await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(64, 22), max_tokens: 2 });
    await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(64, 23), max_tokens: 2 });
    await waitFor(async () => (await metricSum(t.url, 'kvroute_kv_event_replays_total', worker)) > 0, 'a replay');
    expect(await metricSum(t.url, 'kvroute_kv_event_gaps_total', worker)).toBeGreaterThan(0);
    // The engine restarts (its sequence starts over): the worker's blocks are dropped, counted.
    await t.fleet.sim[0].faults.restart();
    await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(64, 24), max_tokens: 2 });
    await waitFor(async () => (await metricSum(t.url, 'kvroute_kv_event_restarts_total', worker)) > 0, 'the restart to be seen');
    for (const name of ['kvroute_kv_event_decode_errors_total', 'kvroute_kv_events_rejected_total'])
      expect(await (await fetch(`${t.url}/metrics`)).text()).toContain(`# TYPE ${name} counter`);
  });
});

describe('backpressure', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 0, decode: 1, config: { routing: { maxQueuedPrefillTokens: 64 } } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses with 429 and Retry-After when queued prefill work passes its cap', async () => {
    // A first request whose engine does not answer keeps its prefill tokens booked.
    t.fleet.sim[0].faults.hang(true);
    const controller = new AbortController();
    const stuck = fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: prompt(200), max_tokens: 2 }),
      signal: controller.signal,
    }).catch((err: unknown) => err);
    await waitFor(async () => (await metricSum(t.url, 'kvroute_worker_active_prefill_tokens')) === 200, 'the first request to be booked');
    const r = await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(32, 1), max_tokens: 2 });
    expect(r.status).toBe(429);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((r.json as ErrorBody).error.code).toBe('backpressure');
    expect(await metricSum(t.url, 'kvroute_backpressure_refusals_total')).toBe(1);
    controller.abort();
    await stuck;
    t.fleet.sim[0].faults.hang(false);
    await waitForNoLoad(t.url);
    const after = await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(32, 2), max_tokens: 2 });
    expect(after.status).toBe(200);
  });
});

describe('health checks', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 1, decode: 1, config: { health: { intervalMs: 0, timeoutMs: 300, blockGraceMs: 0 } } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('takes a hung prefill worker out of selection at once and brings it back when it answers', async () => {
    t.fleet.sim[0].faults.hang(true);
    await t.router.checkHealth();
    expect(t.router.registry.list().find((w) => w.id === 0)).toMatchObject({ state: 'unhealthy', inSelection: false });
    const during = await post(`${t.url}/v1/completions`, { model: MODEL, prompt: 'while hung', max_tokens: 2 });
    expect(during.status).toBe(200);
    expect(during.headers.get('x-kvroute-mode')).toBe('aggregated');
    t.fleet.sim[0].faults.hang(false);
    await t.router.checkHealth();
    expect(t.router.registry.list().find((w) => w.id === 0)?.state).toBe('healthy');
    const after = await post(`${t.url}/v1/completions`, { model: MODEL, prompt: 'recovered', max_tokens: 2 });
    expect(after.headers.get('x-kvroute-mode')).toBe('disaggregated');
    expect(after.headers.get('x-kvroute-prefill-worker')).toBe('0');
  });

  it('takes a dead prefill worker out (serving aggregated) and drops its blocks', async () => {
    await post(`${t.url}/v1/completions`, { model: MODEL, prompt: prompt(160, 5), max_tokens: 2 });
    await waitFor(async () => (await metricSum(t.url, 'kvroute_indexed_blocks', 'pool="prefill"')) > 0, 'prefill blocks to be indexed');
    await t.fleet.sim[0].close();
    await t.router.checkHealth();
    const status = t.router.registry.list().find((w) => w.id === 0);
    expect(status?.state).toBe('unhealthy');
    expect(await metricSum(t.url, 'kvroute_indexed_blocks', 'pool="prefill"')).toBe(0);
    const r = await post(`${t.url}/v1/completions`, { model: MODEL, prompt: 'after the prefill worker died', max_tokens: 2 });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-kvroute-mode')).toBe('aggregated');
  });
});
