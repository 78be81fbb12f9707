// Each frontend against the same synthetic handler: replies, bodies and their limit, streaming
// with backpressure (a paused client stops the pulls; nothing is lost or resent) and disconnects.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectBody } from '../../../src/server/call/body.js';
import { errorReply } from '../../../src/server/call/errors.js';
import type { FrameStream, HttpCall, HttpReply } from '../../../src/server/call/call.js';
import { FRONTENDS, startFrontend, type Frontend, type TestHandler } from '../helpers/frontends.js';

const FRAME_BYTES = 64 * 1024;
const FRAMES = 400; // 25 MiB: far more than loopback socket buffers hold

class SyntheticHandler implements TestHandler {
  readonly config = { maxBodyBytes: 4096 };
  pulled = 0;
  cancelled = 0;
  aborted = 0;
  finished = 0;

  serves(_method: string, path: string): boolean {
    return path !== '/not-mine' && path !== '/host-route';
  }

  async handle(call: HttpCall): Promise<HttpReply> {
    try {
      const body = await collectBody(call.body, this.config.maxBodyBytes, call.headers['content-length']);
      if (call.url.startsWith('/stream')) return { status: 200, headers: { 'content-type': 'text/event-stream' }, stream: this.stream(call) };
      return {
        status: 200,
        headers: { 'content-type': 'application/json', 'x-request-id': call.headers['x-request-id'] ?? 'none' },
        body: JSON.stringify({ method: call.method, url: call.url, body: Buffer.from(body).toString(), loopback: call.remoteAddress }),
      };
    } catch (err) {
      const r = errorReply(err);
      return { status: r.status, headers: r.headers, body: r.body };
    }
  }

  private stream(call: HttpCall): FrameStream {
    let i = 0;
    let done = false;
    call.signal?.addEventListener('abort', () => this.aborted++);
    const pad = 'x'.repeat(FRAME_BYTES - 15); // "data: " + 6 digits + " " + pad + "\n\n" = FRAME_BYTES
    return {
      next: async () => {
        if (done) return null;
        if (i === FRAMES) {
          done = true;
          this.finished++;
          return null;
        }
        this.pulled++;
        await new Promise((r) => setImmediate(r));
        return `data: ${String(i++).padStart(6, '0')} ${pad}\n\n`;
      },
      cancel: () => {
        if (!done) this.cancelled++;
        done = true;
      },
    };
  }
}

function post(url: string, path: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe.each(FRONTENDS)('frontend %s', (name) => {
  let handler: SyntheticHandler;
  let server: Frontend;

  beforeAll(async () => {
    handler = new SyntheticHandler();
    server = await startFrontend(name, handler);
  });
  afterAll(async () => {
    await server.close();
  });

  it('passes method, path, query, headers and body through and answers once', async () => {
    const res = await post(server.url, '/admin/echo?x=1', '{"a":1}', { 'x-request-id': 'rid-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('rid-1');
    const json = (await res.json()) as { method: string; url: string; body: string; loopback: string };
    expect(json.method).toBe('POST');
    expect(json.url).toBe('/admin/echo?x=1');
    expect(JSON.parse(json.body)).toEqual({ a: 1 });
    expect(json.loopback).toMatch(/127\.0\.0\.1|::1/);
  });

  it('answers 413 for a body over the limit', async () => {
    const res = await post(server.url, '/echo', JSON.stringify({ pad: 'y'.repeat(10_000) }));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });

  it('streams every frame in order, pausing the source while the client does not read', async () => {
    const pulledBefore = handler.pulled;
    const finishedBefore = handler.finished;
    const received: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const u = new URL(server.url);
      const req = request(
        { host: u.hostname, port: u.port, path: '/stream', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '2' } },
        (res) => {
          res.pause();
          // The client reads nothing: once socket buffers are full, the frontend must stop pulling.
          void (async () => {
            await waitFor(() => handler.pulled - pulledBefore > 0, 'first pull');
            let last = -1;
            while (handler.pulled !== last) {
              last = handler.pulled;
              await sleep(300);
            }
            try {
              expect(handler.pulled - pulledBefore).toBeLessThan(FRAMES);
            } catch (err) {
              reject(err);
              return;
            }
            res.on('data', (c: Buffer) => received.push(c));
            res.on('end', () => resolve());
            res.on('error', reject);
            res.resume();
          })();
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    const text = Buffer.concat(received).toString();
    const ids = [...text.matchAll(/data: (\d{6}) /g)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: FRAMES }, (_, i) => i));
    expect(text.length).toBe(FRAMES * FRAME_BYTES);
    expect(handler.finished - finishedBefore).toBe(1);
  });

  it('cancels the stream and aborts the signal when the client disconnects', async () => {
    const cancelledBefore = handler.cancelled;
    const abortedBefore = handler.aborted;
    const res = await post(server.url, '/stream', '{}');
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel(); // closes the connection mid-stream
    await waitFor(() => handler.cancelled > cancelledBefore, 'stream cancel');
    await waitFor(() => handler.aborted > abortedBefore, 'signal abort');
  });

  if (name === 'express') {
    it('leaves routes the router does not serve to the host app', async () => {
      expect(await (await fetch(`${server.url}/host-route`)).json()).toEqual({ host: true });
      expect((await fetch(`${server.url}/not-mine`)).status).toBe(404);
    });
  }
});
