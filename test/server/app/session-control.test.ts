// session_control through the HTTP frontend over simulated SGLang workers: a request that opens a
// session opens it on the engine (open_session) and pins it there, its turns follow it, and a
// request that closes it fires close_session only once its own stream is over, on every way it
// can end (finished, failed, client gone); no session is left open on any engine.
import { afterEach, describe, expect, it } from 'vitest';
import { MODEL, bookedLoad, prompt, startTestRouter, waitFor, waitForNoLoad, type TestRouter } from '../helpers/router.js';

let t: TestRouter | undefined;
afterEach(async () => {
  for (const w of t?.fleet.sim ?? []) w.faults.hang(false);
  await t?.close();
  t = undefined;
});

const send = (
  seed: number,
  session: Record<string, unknown> | undefined,
  o: { headers?: Record<string, string>; signal?: AbortSignal; stream?: boolean } = {},
) =>
  fetch(`${t!.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...o.headers },
    body: JSON.stringify({
      model: MODEL,
      prompt: prompt(40, seed),
      max_tokens: 4,
      stream: o.stream ?? false,
      ...(session ? { nvext: { session_control: session } } : {}),
    }),
    signal: o.signal,
  });
const openOn = () => t!.fleet.sim.flatMap((w) => w.openSessions().map((id) => `${w.id}:${id}`));

describe('session_control', () => {
  it('opens on the engine and pins, keeps turns there, and closes after the closing stream is over', async () => {
    t = await startTestRouter({ decode: 2, style: 'sglang', config: { routing: { policy: 'round_robin' } } });
    const open = await send(1, undefined, {
      headers: { 'x-kvroute-session-id': 'chat-1', 'x-kvroute-session-action': 'open', 'x-kvroute-session-timeout': '60' },
    });
    expect(open.status).toBe(200);
    const worker = open.headers.get('x-kvroute-decode-worker');
    expect(openOn()).toEqual([`${worker}:chat-1`]);
    for (const seed of [2, 3, 4]) {
      const turn = await send(seed, { session_id: 'chat-1' });
      expect(turn.headers.get('x-kvroute-decode-worker')).toBe(worker);
    }
    const explained = await fetch(`${t.url}/v1/route`, {
      method: 'POST',
      headers: { 'x-kvroute-session-id': 'chat-1' },
      body: JSON.stringify({ model: MODEL, prompt: prompt(40, 9) }),
    });
    expect(String(((await explained.json()) as { decode: { worker: number } }).decode.worker)).toBe(worker);
    const close = await send(5, { session_id: 'chat-1', action: 'close' }, { stream: true });
    expect(close.headers.get('x-kvroute-decode-worker')).toBe(worker);
    expect(await close.text()).toContain('[DONE]');
    await waitFor(() => openOn().length === 0, 'close_session after the stream');
    await waitForNoLoad(t.url);
  });

  it('closes when the closing request fails, and when its client leaves', async () => {
    t = await startTestRouter({ decode: 1, style: 'sglang' });
    const w = t.fleet.sim[0];
    expect((await send(10, { session_id: 'a', action: 'open' })).status).toBe(200);
    expect((await send(11, { session_id: 'b', action: 'open' })).status).toBe(200);
    expect(w.openSessions().sort()).toEqual(['a', 'b']);

    w.faults.failNext(1);
    const failed = await send(12, { session_id: 'a', action: 'close' });
    expect(failed.status).toBe(502);
    await waitFor(() => !w.openSessions().includes('a'), 'a closed after its failure');

    // The engine holds the request unanswered; the client leaves; close_session waits for the engine to answer.
    w.faults.hang(true);
    const client = new AbortController();
    const gone = send(13, { session_id: 'b', action: 'close' }, { signal: client.signal, stream: true }).catch((err: Error) => err.name);
    await waitFor(async () => (await bookedLoad(t!.url)).requests === 1, 'the closing request at its engine');
    expect(w.openSessions()).toEqual(['b']);
    client.abort();
    expect(await gone).toBe('AbortError');
    w.faults.hang(false);
    await waitFor(() => w.openSessions().length === 0, 'b closed after its client left');
    await waitForNoLoad(t.url);
  });

  it('answers 400 to a session in the wrong state, and to a malformed hint, opening nothing', async () => {
    t = await startTestRouter({ decode: 1, style: 'sglang' });
    const code = async (r: Response) => [r.status, ((await r.json()) as { error: { code: string } }).error.code];
    expect(await code(await send(20, { session_id: 'nope' }))).toEqual([400, 'invalid_routing_hint']);
    expect(await code(await send(21, { session_id: 'nope', action: 'close' }))).toEqual([400, 'invalid_routing_hint']);
    expect(await code(await send(22, { session_id: 'x', action: 'pause' }))).toEqual([400, 'invalid_routing_hint']);
    expect(await code(await send(23, { session_id: 'x', timeout: 5 }))).toEqual([400, 'invalid_routing_hint']);
    expect(openOn()).toEqual([]);
    const header = { 'x-kvroute-session-id': 'x', 'x-kvroute-session-action': 'open' };
    expect((await send(24, undefined, { headers: header })).status).toBe(200);
    expect(await code(await send(25, undefined, { headers: header }))).toEqual([400, 'invalid_routing_hint']);
    expect(await code(await send(26, { session_id: 'y' }, { headers: { 'x-kvroute-session-id': 'x' } }))).toEqual([400, 'invalid_routing_hint']);
    expect(openOn()).toEqual(['0:x']);
    // The router closing closes what is still open.
    await t.router.close();
    await waitFor(() => openOn().length === 0, 'x closed with the router');
  });
});
