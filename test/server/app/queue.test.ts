// The router queue and conditional disaggregation through the HTTP frontend: requests wait by
// priority while the worker is busy, the bounds answer 429 with Retry-After, a client that leaves
// is dropped from the queue, the admin API changes the settings at runtime (a bad body changes
// nothing), /metrics counts it all, and /v1/route and the headers say why a mode was chosen.
import { afterEach, describe, expect, it } from 'vitest';
import { MODEL, bookedLoad, metricSum, prompt, startTestRouter, waitFor, waitForNoLoad, type TestRouter } from '../helpers/router.js';

let t: TestRouter | undefined;
afterEach(async () => {
  for (const w of t?.fleet.sim ?? []) w.faults.hang(false);
  await t?.close();
  t = undefined;
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${t!.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
const complete = (seed: number, headers: Record<string, string> = {}, signal?: AbortSignal, maxTokens = 2) =>
  post('/v1/completions', { model: MODEL, prompt: prompt(48, seed), max_tokens: maxTokens }, headers, signal);
const admin = async (method: 'GET' | 'PUT', path: string, body?: unknown) => {
  const res = await fetch(`${t!.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const depth = async () => (await admin('GET', '/admin/queue')).body.queues.decode.depth as number;

describe('the router queue over HTTP', () => {
  it('holds requests while the worker is busy, answers 429 with Retry-After beyond its bound, and serves the waiting ones by priority', async () => {
    t = await startTestRouter({ decode: 1, config: { routerQueue: { threshold: 0, maxRequests: 2 } } });
    for (const w of t.fleet.sim) w.faults.hang(true);
    const a = complete(1); // booked on the hung engine
    await waitFor(async () => (await bookedLoad(t!.url)).requests === 1, 'A booked');
    // The low one, if served first, would finish first: it is the one that wants more tokens.
    const low = complete(2, { 'x-kvroute-priority': '0' }, undefined, 12);
    await waitFor(async () => (await depth()) === 1, 'the low one waiting');
    const high = post('/v1/completions', { model: MODEL, prompt: prompt(48, 3), max_tokens: 2, nvext: { agent_hints: { priority: 5 } } });
    await waitFor(async () => (await depth()) === 2, 'the high one waiting');

    const refused = await complete(4);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('queue_full');
    expect(await metricSum(t.url, 'kvroute_router_queue_rejections_total', 'reason="queue_full_requests"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_router_queue_depth', 'priority="5"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_router_queue_depth', 'pool="decode"')).toBe(2);

    // A bad change is refused whole; a good one applies at once.
    const bad = await admin('PUT', '/admin/queue', { maxRequests: 3, policy: 'sjf' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/policy must be one of fcfs, lcfs, wspt/);
    expect((await admin('GET', '/admin/queue')).body.settings).toMatchObject({ maxRequests: 2, policy: 'fcfs', threshold: 0 });
    expect((await admin('PUT', '/admin/queue', { maxRequests: 3 })).body.settings).toMatchObject({ maxRequests: 3, threshold: 0 });

    const order: string[] = [];
    const done = (name: string, p: Promise<Response>) => p.then(async (r) => (order.push(name), r.status));
    const results = [done('low', low), done('high', high)];
    for (const w of t.fleet.sim) w.faults.hang(false);
    expect((await a).status).toBe(200);
    expect(await Promise.all(results)).toEqual([200, 200]);
    expect(order).toEqual(['high', 'low']);
    expect(await metricSum(t.url, 'kvroute_router_queue_wait_seconds_count', 'pool="decode"')).toBe(2);
    await waitForNoLoad(t.url);
  });

  it('drops a waiting request whose client left, and lets everything through once turned off', async () => {
    t = await startTestRouter({ decode: 1, config: { routerQueue: { threshold: 0 } } });
    for (const w of t.fleet.sim) w.faults.hang(true);
    const a = complete(11);
    await waitFor(async () => (await bookedLoad(t!.url)).requests === 1, 'A booked');
    const leaver = new AbortController();
    const gone = complete(12, {}, leaver.signal).catch((err: Error) => err.name);
    const stays = complete(13);
    await waitFor(async () => (await depth()) === 2, 'two waiting');
    leaver.abort();
    expect(await gone).toBe('AbortError');
    await waitFor(async () => (await metricSum(t!.url, 'kvroute_router_queue_rejections_total', 'reason="client_gone"')) === 1, 'the drop counted');
    expect(await depth()).toBe(1);
    expect((await admin('PUT', '/admin/queue', { threshold: null })).body.settings.threshold).toBe(null);
    await waitFor(async () => (await depth()) === 0, 'the queue released');
    for (const w of t.fleet.sim) w.faults.hang(false);
    expect((await a).status).toBe(200);
    expect((await stays).status).toBe(200);
    expect(await metricSum(t.url, 'kvroute_requests_served_total')).toBe(2); // the one that left was never served
    await waitForNoLoad(t.url);
  });

  it('sheds a request that waited maxWaitMs with 429 and Retry-After, though the hung fleet gives the queue no turn', async () => {
    t = await startTestRouter({ decode: 1, config: { routerQueue: { threshold: 0, maxWaitMs: 300 } } });
    for (const w of t.fleet.sim) w.faults.hang(true);
    const a = complete(41);
    await waitFor(async () => (await bookedLoad(t!.url)).requests === 1, 'A booked');
    const late = complete(42);
    await waitFor(async () => (await depth()) === 1, 'one waiting');
    // Nothing arrives, nothing finishes: the queue's timer sheds it at its deadline.
    const shed = await late;
    expect(shed.status).toBe(429);
    expect(Number(shed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await shed.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'queue_full',
      message: expect.stringMatching(/maxWaitMs/),
    });
    expect(await metricSum(t.url, 'kvroute_router_queue_rejections_total', 'reason="expired"')).toBe(1);
    expect(await depth()).toBe(0);
    // With the limit turned off at runtime, a newcomer waits for as long as the fleet hangs.
    expect((await admin('PUT', '/admin/queue', { maxWaitMs: null })).body.settings.maxWaitMs).toBe(null);
    const next = complete(43);
    await waitFor(async () => (await depth()) === 1, 'the next one waiting');
    await new Promise((r) => setTimeout(r, 400));
    expect(await depth()).toBe(1);
    for (const w of t.fleet.sim) w.faults.hang(false);
    expect((await a).status).toBe(200);
    expect((await next).status).toBe(200);
    await waitForNoLoad(t.url);
  });

  it('refuses a malformed priority with 400', async () => {
    t = await startTestRouter({ decode: 1, config: { routerQueue: { threshold: 1 } } });
    const r = await complete(20, { 'x-kvroute-priority': 'high' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('invalid_routing_hint');
  });
});

describe('conditional disaggregation over HTTP', () => {
  it('serves a short prompt aggregated and says why, in the headers and /v1/route; changeable at runtime', async () => {
    t = await startTestRouter({ prefill: 1, decode: 1, config: { conditionalDisagg: { enabled: true, bypassBelowTokens: 64, disaggAboveTokens: 1024 } } });
    const short = await complete(30);
    expect(short.status).toBe(200);
    expect([short.headers.get('x-kvroute-mode'), short.headers.get('x-kvroute-mode-reason')]).toEqual(['aggregated', 'below_threshold']);
    const route = (await (await post('/v1/route', { model: MODEL, prompt: prompt(48, 31) })).json()) as { mode: string; mode_reason: string };
    expect(route).toMatchObject({ mode: 'aggregated', mode_reason: 'below_threshold' });
    expect((await admin('PUT', '/admin/conditional-disagg', { bypassBelowTokens: -1 })).status).toBe(400);
    expect((await admin('PUT', '/admin/conditional-disagg', { enabled: false })).body.settings.enabled).toBe(false);
    const now = await complete(32);
    expect([now.headers.get('x-kvroute-mode'), now.headers.get('x-kvroute-mode-reason')]).toEqual(['disaggregated', 'unconditional']);
    expect(await metricSum(t.url, 'kvroute_mode_decisions_total', 'reason="below_threshold"')).toBe(1);
    await waitForNoLoad(t.url);
  });
});
