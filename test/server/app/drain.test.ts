// router.drain(): /health turns 503 at once, new requests get 503 with Retry-After and
// Connection: close, the requests in flight finish (streams to [DONE]); when the time runs out,
// what is still running is cut (an error frame, a 503) and every booking is freed.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { bookedLoad, prompt, startTestRouter, waitFor, waitForNoLoad, type TestRouter } from '../helpers/router.js';

let t: TestRouter | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/**
 * A streamed completion whose chunks are collected as they come. At speedup 1 a token takes about
 * 7 ms: 400 tokens keep a stream running for seconds after its first chunk, so the test can hold
 * it there (the engines' hang switch) however loaded the machine is.
 */
function openStream(url: string, seed: number, maxTokens = 400) {
  const chunks: string[] = [];
  const done = fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: prompt(64, seed), max_tokens: maxTokens, stream: true, ignore_eos: true }),
  }).then(async (res) => {
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(decoder.decode(part));
    return chunks.join('');
  });
  done.catch(() => undefined); // awaited by the test; a failure must not also count as unhandled
  return { chunks, done };
}

/** A plain node:http request, so the Connection header can be read as sent. */
function rawPost(url: string, path: string, body: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('router.drain', () => {
  it('lets streams in flight finish to [DONE] while refusing new requests, then resolves', async () => {
    t = await startTestRouter({ decode: 2, speedup: 1 });
    const streams = [0, 1, 2].map((i) => openStream(t!.url, i));
    await waitFor(() => streams.every((s) => s.chunks.length > 0), 'every stream to start');
    // Engines pause: the streams stay in flight for as long as the test says.
    for (const w of t.fleet.sim) w.faults.hang(true);

    const drained = t.router.drain({ timeoutMs: 30_000 });
    expect(t.router.draining).toBe(true);
    const health = await fetch(`${t.url}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { status: string }).status).toBe('draining');
    const refused = await rawPost(t.url, '/v1/completions', JSON.stringify({ prompt: 'hi', max_tokens: 2 }));
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.connection).toBe('close');
    expect((JSON.parse(refused.body) as { error: { code: string } }).error.code).toBe('router_draining');
    expect((await bookedLoad(t.url)).requests).toBe(3);

    for (const w of t.fleet.sim) w.faults.hang(false);
    const texts = await Promise.all(streams.map((s) => s.done));
    for (const text of texts) expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await drained).toMatchObject({ inFlight: 3, cut: 0, timedOut: false, booked: 0 });
    await waitForNoLoad(t.url);
  });

  it('cuts what is still running when the time runs out: streams get an error frame, waiting requests a 503', async () => {
    t = await startTestRouter({ decode: 2, speedup: 1 });
    const streams = [0, 1].map((i) => openStream(t!.url, 10 + i));
    await waitFor(() => streams.every((s) => s.chunks.length > 0), 'every stream to start');
    for (const w of t.fleet.sim) w.faults.hang(true);
    // A non-streamed request parked by the hung engine, before the drain begins.
    const waiting = fetch(`${t.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: prompt(32, 99), max_tokens: 4 }) });
    waiting.catch(() => undefined); // awaited below; a failure must not also count as unhandled
    await waitFor(async () => (await bookedLoad(t!.url)).requests === 3, 'the third request to be booked');

    const result = await t.router.drain({ timeoutMs: 200 });
    expect(result).toMatchObject({ inFlight: 3, cut: 3, timedOut: true, booked: 0 });
    for (const text of await Promise.all(streams.map((s) => s.done))) {
      const last = text.trimEnd().split('\n\n').at(-1)!;
      expect(JSON.parse(last.slice('data: '.length))).toEqual({
        error: {
          message: 'the router shut down before this request finished (its drain timeout ran out)',
          type: 'service_unavailable',
          code: 'router_shutting_down',
        },
      });
      expect(text).not.toContain('[DONE]');
    }
    const cut = await waiting;
    expect(cut.status).toBe(503);
    expect(((await cut.json()) as { error: { code: string } }).error.code).toBe('router_shutting_down');
    await waitForNoLoad(t.url);
    for (const w of t.fleet.sim) w.faults.hang(false);
  });

  it('resolves at once with nothing in flight, and refuses a bad timeout', async () => {
    t = await startTestRouter({ decode: 1 });
    await expect(t.router.drain({ timeoutMs: -1 })).rejects.toThrow(RangeError);
    expect(await t.router.drain({ timeoutMs: 1000 })).toMatchObject({ inFlight: 0, cut: 0, timedOut: false });
    // Routes that are not the OpenAI API keep answering (metrics, liveness), with Connection: close.
    const live = await fetch(`${t.url}/live`);
    expect(live.status).toBe(200);
  });
});
