// Session affinity through the HTTP frontend: the session header keeps a conversation on its
// workers, a malformed session id is a 400, and /metrics and /v1/route show it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, metricSum, startTestRouter, waitForNoLoad, type TestRouter } from '../helpers/router.js';

describe('session affinity', () => {
  let t: TestRouter;
  beforeAll(async () => {
    // Round robin would move every request on: what keeps a session in place is the affinity.
    t = await startTestRouter({ prefill: 2, decode: 2, style: 'vllm', config: { sessionAffinity: true, routing: { policy: 'round_robin' } } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = async (prompt: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2 }),
    });
    const body = (await res.json()) as { error?: { code: string } };
    return { status: res.status, body, prefill: res.headers.get('x-kvroute-prefill-worker'), decode: res.headers.get('x-kvroute-decode-worker') };
  };

  it('keeps a session on its prefill and decode workers, turn after turn', async () => {
    const first = await send('turn 1', { 'x-session-id': 'conv-1' });
    expect(first.status).toBe(200);
    for (const turn of ['turn 2', 'turn 3', 'turn 4']) {
      const r = await send(turn, { 'x-session-id': 'conv-1' });
      expect([r.prefill, r.decode]).toEqual([first.prefill, first.decode]);
    }
    const free = new Set<string | null>();
    for (const turn of ['a', 'b', 'c', 'd']) free.add((await send(turn)).decode);
    expect(free.size).toBe(2);
    const explained = await fetch(`${t.url}/v1/route`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'conv-1' },
      body: JSON.stringify({ model: MODEL, prompt: 'turn 5' }),
    });
    const q = (await explained.json()) as { prefill: { worker: number }; decode: { worker: number } };
    expect([String(q.prefill.worker), String(q.decode.worker)]).toEqual([first.prefill, first.decode]);
    expect(await metricSum(t.url, 'kvroute_session_requests_total', 'result="hit"')).toBe(3);
    expect(await metricSum(t.url, 'kvroute_session_requests_total', 'result="bound"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_sessions')).toBe(1);
    await waitForNoLoad(t.url);
  });

  it('answers a malformed session id with 400', async () => {
    const r = await send('x', { 'x-session-id': 'not ok' });
    expect(r.status).toBe(400);
    expect(r.body.error?.code).toBe('invalid_routing_hint');
  });
});
