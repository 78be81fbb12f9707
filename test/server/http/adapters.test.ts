// The same router behind each adapter (node:http, Express, Fastify, Hono) behaves like the
// uWebSockets.js frontend: openai client streams and non-streams, errors, disconnects.
import { request, type IncomingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { startEmbeddedFleet, type EmbeddedFleet } from '../../../src/server/app/embedded.js';
import { startFrontend, type Frontend, type FrontendName } from '../helpers/frontends.js';
import { BLOCK_SIZE, MODEL, metricSum, prompt, waitFor, waitForNoLoad } from '../helpers/router.js';

const ADAPTERS: FrontendName[] = ['node:http', 'express', 'fastify', 'hono'];

describe.each(ADAPTERS)('router behind %s', (name) => {
  let fleet: EmbeddedFleet;
  let router: Router;
  let server: Frontend;
  let client: OpenAI;
  const post = (body: object, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });

  beforeAll(async () => {
    fleet = await startEmbeddedFleet({ prefill: 1, decode: 1, style: 'vllm', speedup: 200, blockSize: BLOCK_SIZE, kvBlocks: 1024, model: MODEL });
    // Queued prefill work is capped, so the backpressure test can fill it with one request.
    router = await createRouter({
      blockSize: BLOCK_SIZE,
      model: MODEL,
      health: { intervalMs: 0 },
      maxBodyBytes: 4096,
      routing: { maxQueuedPrefillTokens: 150 },
      workers: fleet.workers,
    });
    server = await startFrontend(name, router);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(async () => {
    await server?.close();
    await router?.close();
    await fleet?.close();
  });

  it('serves completions and chat, streamed and not', async () => {
    const { data, response } = await client.completions.create({ model: MODEL, prompt: prompt(50, 1), max_tokens: 4 }).withResponse();
    expect(data.usage?.completion_tokens).toBe(4);
    expect(response.headers.get('x-kvroute-prefill-worker')).toBe('0');
    expect(response.headers.get('x-kvroute-decode-worker')).toBe('1');
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi there' }],
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    let deltas = 0;
    let usage: number | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas++;
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(deltas).toBeGreaterThan(0);
    expect(usage).toBe(6);
  });

  it('answers bad input with OpenAI-style errors', async () => {
    const bad = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt":' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    const big = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: prompt(6000) }),
    });
    expect(big.status).toBe(413);
    await expect(client.completions.create({ model: 'unknown-model', prompt: 'x' })).rejects.toMatchObject({ status: 404 });
    const wrongType = await post({ model: MODEL, prompt: 'x', max_tokens: 'eight' });
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as ErrorBody).error.code).toBe('invalid_type');
  });

  it('echoes X-Request-Id, or generates one, on answers and errors alike', async () => {
    const mine = await post({ model: MODEL, prompt: 'hello', max_tokens: 2 }, { 'x-request-id': `mine-${name}` });
    expect(mine.status).toBe(200);
    expect(mine.headers.get('x-request-id')).toBe(`mine-${name}`);
    const failed = await post({ model: 'unknown-model', prompt: 'x' });
    expect(failed.status).toBe(404);
    expect(failed.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 503 with Retry-After and an error body when no worker can serve', async () => {
    router.registry.drain(1);
    try {
      const r = await post({ model: MODEL, prompt: 'nobody', max_tokens: 2 });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(((await r.json()) as ErrorBody).error).toMatchObject({ code: 'no_eligible_worker', type: 'service_unavailable' });
    } finally {
      router.registry.activate(1);
    }
  });

  it('refuses with 429 and Retry-After when queued prefill work passes its cap', async () => {
    fleet.sim[0].faults.hang(true); // the prefill worker stops answering: its booking stays
    const controller = new AbortController();
    const stuck = post({ model: MODEL, prompt: prompt(120, 3), max_tokens: 2 }, {}, controller.signal).catch((err: unknown) => err);
    try {
      await waitFor(async () => (await metricSum(server.url, 'kvroute_worker_active_prefill_tokens')) === 120, 'the first request to be booked');
      const r = await post({ model: MODEL, prompt: prompt(60, 4), max_tokens: 2 });
      expect(r.status).toBe(429);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await r.json()) as ErrorBody).error.code).toBe('backpressure');
    } finally {
      controller.abort();
      await stuck;
      fleet.sim[0].faults.hang(false);
    }
    await waitForNoLoad(server.url);
  });

  it('frees the booking when the client disconnects mid-stream', async () => {
    const before = await metricSum(server.url, 'kvroute_client_disconnects_total');
    const controller = new AbortController();
    const stream = await client.completions.create({ model: MODEL, prompt: prompt(40, 2), max_tokens: 100_000, stream: true }, { signal: controller.signal });
    let n = 0;
    for await (const _c of stream) {
      if (++n === 2) {
        controller.abort(); // the client goes away mid-stream
        break;
      }
    }
    await waitFor(async () => (await metricSum(server.url, 'kvroute_client_disconnects_total')) > before, 'the disconnect');
    await waitForNoLoad(server.url);
  });

  // Last: it kills the fleet's decode worker.
  it('gives the client a clean error when its worker dies mid-stream, and frees the booking', async () => {
    const stream = await client.completions.create({ model: MODEL, prompt: prompt(40, 5), max_tokens: 100_000, stream: true });
    let seen = 0;
    const consumed = (async () => {
      for await (const _chunk of stream) {
        if (++seen === 3) void fleet.sim[1].close();
      }
    })();
    await expect(consumed).rejects.toThrow(/engine/i);
    await waitForNoLoad(server.url);
  });
});

describe.each(ADAPTERS)('a draining router behind %s', (name) => {
  it('finishes the stream in flight and answers new requests 503 with Connection: close', async () => {
    const fleet = await startEmbeddedFleet({ prefill: 0, decode: 1, style: 'vllm', speedup: 200, blockSize: BLOCK_SIZE, kvBlocks: 1024, model: MODEL });
    const router = await createRouter({ blockSize: BLOCK_SIZE, model: MODEL, health: { intervalMs: 0 }, workers: fleet.workers });
    const server = await startFrontend(name, router);
    try {
      fleet.sim[0].faults.hang(true); // the stream waits for its engine until the test lets it go
      const streamed = fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: prompt(40, 9), max_tokens: 8, stream: true }),
      }).then((r) => r.text());
      await waitFor(async () => (await metricSum(server.url, 'kvroute_worker_active_requests')) === 1, 'the stream to be booked');
      const drained = router.drain({ timeoutMs: 30_000 });
      const refused = await rawRequest(`${server.url}/v1/completions`, JSON.stringify({ prompt: 'x', max_tokens: 1 }));
      expect(refused.status).toBe(503);
      expect(refused.headers.connection).toBe('close');
      expect(refused.headers['retry-after']).toBe('1');
      fleet.sim[0].faults.hang(false);
      expect((await streamed).endsWith('data: [DONE]\n\n')).toBe(true);
      expect(await drained).toMatchObject({ inFlight: 1, cut: 0, booked: 0 });
    } finally {
      await server.close();
      await router.close();
      await fleet.close();
    }
  });
});

/** A POST over a connection of its own (node:http), so the Connection header is read as sent. */
function rawRequest(url: string, body: string): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

type ErrorBody = { error: { code: string; type: string; message: string } };
