import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/processes.js';
import { invalidRequest } from '../../../src/sim/worker/errors.js';
import { type HttpExchange, type HttpServer, listenHttp } from '../../../src/sim/worker/http-server.js';

type ErrorBody = { error: { message: string; type: string; code: string } };

const servers: HttpServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function serve(routes: Parameters<typeof listenHttp>[0]['routes'], maxBodyBytes?: number): Promise<string> {
  const s = await listenHttp({ host: '127.0.0.1', port: 0, routes, maxBodyBytes });
  servers.push(s);
  return `http://127.0.0.1:${s.port}`;
}

describe('listenHttp', () => {
  it('routes by method and path, with the body read for POST', async () => {
    const base = await serve([
      { method: 'GET', path: '/hello', handler: (ex) => ex.json(200, { hi: ex.request.headers['x-name'] }) },
      { method: 'POST', path: '/echo', handler: (ex) => ex.send(200, Buffer.from(ex.body).toString(), { 'content-type': 'text/plain' }) },
    ]);
    const get = await fetch(`${base}/hello`, { headers: { 'x-name': 'kv' } });
    expect(get.status).toBe(200);
    expect(await get.json()).toEqual({ hi: 'kv' });
    const big = 'x'.repeat(300_000); // several onData chunks
    const post = await fetch(`${base}/echo`, { method: 'POST', body: big });
    expect(await post.text()).toBe(big);
  });

  it('answers unknown routes 404 and wrong methods 405, OpenAI-style', async () => {
    const base = await serve([{ method: 'POST', path: '/v1/completions', handler: (ex) => ex.json(200, {}) }]);
    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { message: 'no route for GET /nope', type: 'invalid_request_error', code: 'not_found' } });
    const wrong = await fetch(`${base}/v1/completions`);
    expect(wrong.status).toBe(405);
    expect(((await wrong.json()) as ErrorBody).error.code).toBe('method_not_allowed');
  });

  it('refuses bodies over the limit with 413', async () => {
    const base = await serve([{ method: 'POST', path: '/x', handler: (ex) => ex.json(200, {}) }], 1000);
    const r = await fetch(`${base}/x`, { method: 'POST', body: 'y'.repeat(1001) });
    expect(r.status).toBe(413);
    expect(((await r.json()) as ErrorBody).error.code).toBe('payload_too_large');
    expect((await fetch(`${base}/x`, { method: 'POST', body: 'y'.repeat(1000) })).status).toBe(200);
  });

  it('turns thrown errors into OpenAI-style replies (sync and async)', async () => {
    const base = await serve([
      {
        method: 'GET',
        path: '/bad',
        handler: () => {
          throw invalidRequest('nope', 'bad_thing');
        },
      },
      {
        method: 'GET',
        path: '/range',
        handler: async () => {
          throw new RangeError('out of range');
        },
      },
      {
        method: 'GET',
        path: '/boom',
        handler: async () => {
          throw new Error('kaput');
        },
      },
    ]);
    const bad = await fetch(`${base}/bad`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: { message: 'nope', type: 'invalid_request_error', code: 'bad_thing' } });
    expect((await fetch(`${base}/range`)).status).toBe(400);
    const boom = await fetch(`${base}/boom`);
    expect(boom.status).toBe(500);
    expect(((await boom.json()) as ErrorBody).error.message).toMatch(/kaput/);
  });

  it('streams server-sent events and delivers every chunk in order to a slow reader', async () => {
    const chunk = 'z'.repeat(64 * 1024);
    const count = 200; // 12.8 MB: far beyond the socket buffers, so writes hit backpressure
    let exchange: HttpExchange | undefined;
    const base = await serve([
      {
        method: 'GET',
        path: '/sse',
        handler: (ex) => {
          exchange = ex;
          ex.startStream();
          for (let i = 0; i < count; i++) ex.sse(`${i}:${chunk}`);
          ex.sse('[DONE]');
          ex.endStream();
        },
      },
    ]);
    const res = await fetch(`${base}/sse`);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    let reads = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (++reads % 50 === 0) await new Promise((r) => setTimeout(r, 5)); // read slowly
    }
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events).toHaveLength(count + 1);
    events.slice(0, count).forEach((e, i) => expect(e).toBe(`data: ${i}:${chunk}`));
    expect(events[count]).toBe('data: [DONE]');
    expect(exchange?.pauses).toBeGreaterThan(0);
  });

  it('reports a client disconnect and ignores writes afterwards', async () => {
    let exchange: HttpExchange | undefined;
    const aborted = new Promise<void>((resolve) => {
      void serve([
        {
          method: 'GET',
          path: '/forever',
          handler: (ex) => {
            exchange = ex;
            ex.onAbort(resolve);
            ex.startStream();
            ex.sse('first');
          },
        },
      ]).then(async (base) => {
        const ac = new AbortController();
        const res = await fetch(`${base}/forever`, { signal: ac.signal });
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        await reader.read();
        ac.abort();
      });
    });
    await aborted;
    expect(exchange?.aborted).toBe(true);
    expect(() => {
      exchange?.sse('late');
      exchange?.endStream();
      exchange?.json(200, {});
    }).not.toThrow();
  });

  it('kill() drops a connection mid-stream', async () => {
    const base = await serve([
      {
        method: 'GET',
        path: '/crash',
        handler: (ex) => {
          ex.startStream();
          ex.sse('one');
          setTimeout(() => ex.kill(), 20);
        },
      },
    ]);
    const res = await fetch(`${base}/crash`);
    await expect(res.text()).rejects.toThrow();
  });

  it('reports a taken port as a clear error', async () => {
    const s = await listenHttp({ host: '127.0.0.1', port: 0, routes: [] });
    servers.push(s);
    await expect(listenHttp({ host: '127.0.0.1', port: s.port, routes: [] })).rejects.toThrow(
      new RegExp(`cannot listen on 127\\.0\\.0\\.1:${s.port} \\(the worker's HTTP server\\): the port is in use by another process`),
    );
  });

  it('shares a port only when both servers ask for it (SO_REUSEPORT)', async () => {
    // A fixed port: Linux never shares a port the system picked (port 0) with a later bind.
    const a = await listenHttp({ host: '127.0.0.1', port: await freePort(), routes: [], reusePort: true });
    servers.push(a);
    const b = await listenHttp({ host: '127.0.0.1', port: a.port, routes: [], reusePort: true });
    servers.push(b);
    expect(b.port).toBe(a.port);
    // An exclusive bind refuses a shared port too.
    await expect(listenHttp({ host: '127.0.0.1', port: a.port, routes: [] })).rejects.toThrow(/the port is in use/);
  });
});
