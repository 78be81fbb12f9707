// GET /dashboard and /dashboard/state through Router.handle: the admin API's access rules, bad
// methods and paths as OpenAI-style errors, and the state's figures after real requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpCall } from '../../../src/server/call/call.js';
import { parseRouterConfig } from '../../../src/server/config/config.js';
import { startServer } from '../../../src/server/app/start.js';
import type { DashboardState } from '../../../src/server/dashboard/state.js';
import { MODEL, startTestRouter, type TestRouter } from '../helpers/router.js';

const call = (method: string, url: string, extra: Partial<HttpCall> = {}): HttpCall => ({ method, url, headers: {}, remoteAddress: '127.0.0.1', ...extra });
const errorOf = (body: string | undefined) => (JSON.parse(body ?? '{}') as { error: { type: string; code: string } }).error;

describe('the live page without an admin token', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 1, decode: 2 });
  });
  afterAll(() => t?.close());

  it('answers loopback peers only, the page and its state alike', async () => {
    for (const url of ['/dashboard', '/dashboard/state']) {
      expect((await t.router.handle(call('GET', url))).status).toBe(200);
      const refused = await t.router.handle(call('GET', url, { remoteAddress: '10.1.2.3' }));
      expect(refused.status).toBe(403);
      expect(errorOf(refused.body).code).toBe('admin_loopback_only');
    }
  });

  it('refuses other methods and paths with OpenAI-style errors', async () => {
    const post = await t.router.handle(call('POST', '/dashboard/state'));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET');
    expect(errorOf(post.body).code).toBe('method_not_allowed');
    const missing = await t.router.handle(call('GET', '/dashboard/nothing'));
    expect(missing.status).toBe(404);
    expect(errorOf(missing.body)).toMatchObject({ type: 'invalid_request_error', code: 'unknown_route' });
  });

  it('serves the page as HTML that loads nothing else', async () => {
    const page = await t.router.handle(call('GET', '/dashboard'));
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.body).toContain("fetch('/dashboard/state'");
    expect(page.body).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet/);
  });

  it('states the workers, their load and index, and the decisions of real requests', async () => {
    const prompt = 'Routing decisions are kept in a small ring for the live page. '.repeat(5);
    for (const id of ['state-1', 'state-2']) {
      const res = await fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: MODEL, prompt, max_tokens: 4 }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const reply = await t.router.handle(call('GET', '/dashboard/state'));
    expect(reply.headers['cache-control']).toBe('no-store');
    const s = JSON.parse(reply.body!) as DashboardState;
    expect(s.status).toBe('ready');
    expect(s.pools.map((p) => [p.name, p.workers.map((w) => w.id)])).toEqual([
      ['prefill', t.fleet.workers.filter((w) => w.role === 'prefill').map((w) => w.id)],
      ['decode', t.fleet.workers.filter((w) => w.role !== 'prefill').map((w) => w.id)],
    ]);
    // Nothing is in flight once the answers came; the prompt's blocks are indexed on the prefill worker.
    for (const w of s.pools.flatMap((p) => p.workers)) expect([w.in_flight, w.prefill_tokens]).toEqual([0, 0]);
    expect(s.pools[0].workers[0].indexed_blocks).toBeGreaterThan(0);
    expect(s.pools[0].workers[0].indexed_blocks).toBeLessThanOrEqual(s.pools[0].indexed_blocks);
    // Newest first; each with its two legs and how it ended.
    const [second, first] = s.decisions;
    expect([second.request_id, first.request_id]).toEqual(['state-2', 'state-1']);
    expect(second).toMatchObject({ mode: 'disaggregated', reason: 'unconditional', outcome: 'end' });
    expect(second.legs.map((l) => l.pool)).toEqual(['prefill', 'decode']);
    expect(second.legs[0].overlap_blocks).toBeGreaterThan(first.legs[0].overlap_blocks);
    expect(second.legs[0].candidates.some((c) => c.worker === second.legs[0].worker)).toBe(true);
    // The history covers the requests: two answers, no error, a hit rate.
    const served = s.history.points.reduce((n, p) => n + (p.served.disaggregated ?? 0), 0);
    expect(served).toBe(2);
    expect(s.history.points.some((p) => p.hit_rate !== null && p.hit_rate > 0)).toBe(true);
    expect(s.history.points.every((p) => p.errors_per_s === 0)).toBe(true);
  });
});

describe('the live page with an admin token', () => {
  it('needs the bearer token for its state from any peer; the page, which holds no data, is served', async () => {
    const t = await startTestRouter({ decode: 1, config: { adminToken: 'dash-s3cret' } });
    try {
      const far = { remoteAddress: '10.1.2.3' };
      expect((await t.router.handle(call('GET', '/dashboard', far))).status).toBe(200);
      const refused = await t.router.handle(call('GET', '/dashboard/state', far));
      expect(refused.status).toBe(401);
      expect(errorOf(refused.body).code).toBe('invalid_admin_token');
      expect((await t.router.handle(call('GET', '/dashboard/state', { ...far, headers: { authorization: 'Bearer wrong' } }))).status).toBe(401);
      expect((await t.router.handle(call('GET', '/dashboard/state', { ...far, headers: { authorization: 'Bearer dash-s3cret' } }))).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('the live page on the admin listener', () => {
  it('is served with the admin API on the loopback listener when the router listens beyond loopback without a token', async () => {
    const started = await startServer({
      config: parseRouterConfig({ host: '0.0.0.0', port: 0, health: { intervalMs: 0 }, logLevel: 'silent' }),
      embedded: { prefill: 0, decode: 1, style: 'vllm', speedup: 100 },
    });
    try {
      const publicUrl = started.server.url.replace('0.0.0.0', '127.0.0.1');
      const refused = await fetch(`${publicUrl}/dashboard/state`);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('admin_not_here');
      expect((await fetch(`${started.adminServer!.url}/dashboard/state`)).status).toBe(200);
      expect((await fetch(`${started.adminServer!.url}/dashboard`)).status).toBe(200);
      expect(started.banner()).toContain(`${started.adminServer!.url}/dashboard`);
    } finally {
      await started.close();
    }
  });
});
