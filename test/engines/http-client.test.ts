import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, type Socket, createServer as createNetServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineError, isAbortError } from '../../src/engines/errors.js';
import { RequestNotSentError } from '../../src/engines/engine-response.js';
import { EngineClient, EngineClients, isResetBeforeAnswer, translateUndiciError } from '../../src/engines/http-client.js';
import type { SseEvent } from '../../src/engines/types.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void | Promise<void>;

interface TestServer {
  url: string;
  connections: number;
  closes: number;
  server: Server;
  close(): Promise<void>;
}

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function serve(handler: Handler): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const t = { connections: 0, closes: 0 } as TestServer;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handler(req, Buffer.concat(chunks).toString('utf8'), res));
    res.on('close', () => {
      if (!res.writableFinished) t.closes++;
    });
  });
  server.on('connection', (s: Socket) => {
    t.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.server = server;
  t.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  open.push(t);
  return t;
}

function client(url: string, opts?: ConstructorParameters<typeof EngineClient>[1]) {
  const c = new EngineClient(url, opts);
  open.push(c);
  return c;
}

const until = async (cond: () => boolean, what: string, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

async function collect(stream: AsyncIterable<SseEvent>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

describe('EngineClient.postJson', () => {
  it('posts the body with X-Request-Id and returns the JSON answer over kept-alive connections', async () => {
    const seen: Array<{ path: string; id: string | undefined; body: string; type: string | undefined }> = [];
    const s = await serve((req, body, res) => {
      seen.push({ path: req.url!, id: req.headers['x-request-id'] as string, body, type: req.headers['content-type'] });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const c = client(`${s.url}/prefix/`);
    expect(await c.postJson('/v1/completions', { prompt: [1], bootstrap_room: (1n << 63n) - 1n }, { requestId: 'r-1' })).toEqual({ ok: true });
    expect(await c.postJson('/v1/chat/completions', { a: 1 }, { requestId: 'r-2', headers: { 'x-extra': '1' } })).toEqual({ ok: true });
    expect(seen[0]).toEqual({
      path: '/prefix/v1/completions',
      id: 'r-1',
      body: '{"prompt":[1],"bootstrap_room":9223372036854775807}',
      type: 'application/json',
    });
    expect(seen[1].path).toBe('/prefix/v1/chat/completions');
    for (let i = 0; i < 10; i++) await c.postJson('/v1/completions', {}, { requestId: `k${i}` });
    // Keep-alive: connections are reused (undici may open a second one while the first is released).
    expect(s.connections).toBeLessThanOrEqual(2);
  });

  it('sends its headers once each, a call header replacing a default of the same name and the others added', async () => {
    const raw: string[][] = [];
    const s = await serve((req, _body, res) => {
      raw.push(req.rawHeaders);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const c = client(s.url);
    await c.postJson('/v1/completions', {}, { requestId: 'r-1' });
    await c.postJson(
      '/v1/completions',
      {},
      { requestId: 'r-2', headers: { 'x-data-parallel-rank': '3', accept: 'application/x-ndjson', 'x-request-id': 'own' } },
    );
    const pairs = (h: string[]) =>
      h.flatMap((v, i) => (i % 2 === 0 ? [[v.toLowerCase(), h[i + 1]]] : [])).filter(([n]) => n !== 'host' && n !== 'connection' && n !== 'content-length');
    expect(pairs(raw[0])).toEqual([
      ['content-type', 'application/json'],
      ['accept', 'application/json'],
      ['x-request-id', 'r-1'],
    ]);
    expect(pairs(raw[1])).toEqual([
      ['content-type', 'application/json'],
      ['accept', 'application/x-ndjson'],
      ['x-request-id', 'own'],
      ['x-data-parallel-rank', '3'],
    ]);
  });

  it('refuses a header value undici cannot send (a newline in the request id) without sending anything', async () => {
    let requests = 0;
    const s = await serve((_req, _body, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const c = client(s.url);
    await expect(c.postJson('/v1/completions', {}, { requestId: 'a\r\nx-evil: 1' })).rejects.toMatchObject({ status: 502, mayHaveAccepted: false });
    await expect(c.postJson('/v1/completions', {}, { requestId: 'ok', headers: { 'x-data-parallel-rank': '1\n' } })).rejects.toMatchObject({
      status: 502,
      mayHaveAccepted: false,
    });
    expect(await c.postJson('/v1/completions', {}, { requestId: 'ok' })).toEqual({});
    expect(requests).toBe(1);
  });

  it('turns a non-2xx answer into EngineError with the status and the parsed body', async () => {
    const s = await serve((_req, _body, res) => {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"message":"prompt too long","type":"invalid_request_error","code":"too_long"}}');
    });
    const err = await client(s.url)
      .postJson('/v1/completions', {}, { requestId: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ status: 400, failure: 'engine_rejected', body: { error: { code: 'too_long' } } });
    expect((err as Error).message).toContain('prompt too long');
  });

  it('keeps a non-JSON error body as text', async () => {
    const s = await serve((_req, _body, res) => void res.writeHead(503).end('overloaded'));
    await expect(client(s.url).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({ status: 503, body: 'overloaded' });
  });

  it('reports a 2xx that is not JSON as a bad response', async () => {
    const s = await serve((_req, _body, res) => void res.writeHead(200).end('<html>'));
    await expect(client(s.url).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({ status: 502, failure: 'engine_bad_response' });
  });

  it('refuses an answer larger than maxResponseBytes', async () => {
    const s = await serve((_req, _body, res) => void res.writeHead(200).end(JSON.stringify({ big: 'x'.repeat(5000) })));
    await expect(client(s.url, { maxResponseBytes: 1000 }).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      failure: 'engine_bad_response',
    });
  });

  it('maps a refused connection to 502 engine_unreachable, never accepted', async () => {
    const s = await serve(() => {});
    const url = s.url;
    await s.close();
    await expect(client(url).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      status: 502,
      failure: 'engine_unreachable',
      engine: url,
      mayHaveAccepted: false,
    });
    await expect(client(url).postStream('/v1/completions', {}, { requestId: 'y' })).rejects.toMatchObject({
      failure: 'engine_unreachable',
      mayHaveAccepted: false,
    });
  });

  it('says a request may have been accepted once it was written: a connection lost after, or any answer', async () => {
    // The engine reads the request, then drops the connection without answering.
    const dropping = await serve((req) => {
      req.socket.destroy();
    });
    await expect(client(dropping.url).postJson('/v1/completions', { a: 1 }, { requestId: 'x' })).rejects.toMatchObject({ status: 502, mayHaveAccepted: true });
    // A server that closes every connection as soon as it is accepted: the request was already written.
    const raw = createNetServer((sock) => sock.destroy());
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise<void>((r) => raw.close(() => r())) });
    const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    await expect(client(rawUrl).postJson('/v1/completions', {}, { requestId: 'y' })).rejects.toMatchObject({ mayHaveAccepted: true });
    const rejecting = await serve((_req, _body, res) => {
      res.writeHead(503).end('{}');
    });
    await expect(client(rejecting.url).postJson('/v1/completions', {}, { requestId: 'z' })).rejects.toMatchObject({
      status: 503,
      failure: 'engine_rejected',
      mayHaveAccepted: true,
    });
  });

  it('calls onSent once the request is written, and never for a request the engine did not get', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const sent: string[] = [];
    await client(s.url).postJson('/v1/completions', {}, { requestId: 'a', onSent: () => sent.push('a') });
    const dropping = await serve((req) => {
      req.socket.destroy();
    });
    await client(dropping.url)
      .postJson('/v1/completions', {}, { requestId: 'b', onSent: () => sent.push('b') })
      .catch(() => undefined);
    const dead = await serve(() => {});
    await dead.close();
    await client(dead.url)
      .postStream('/v1/completions', {}, { requestId: 'c', onSent: () => sent.push('c') })
      .catch(() => undefined);
    expect(sent).toEqual(['a', 'b']);
  });

  it('a name that does not resolve is engine_unreachable, never accepted', async () => {
    await expect(client('http://kvroute-test.invalid:8000').postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      failure: 'engine_unreachable',
      mayHaveAccepted: false,
    });
  });

  it('times out with 504 when the engine sends nothing before the first-byte timeout', async () => {
    const s = await serve(() => {});
    await expect(client(s.url, { firstByteTimeoutMs: 100 }).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      status: 504,
      failure: 'engine_first_byte_timeout',
    });
    await expect(client(s.url).postJson('/v1/completions', {}, { requestId: 'y', firstByteTimeoutMs: 100 })).rejects.toMatchObject({
      failure: 'engine_first_byte_timeout',
    });
  });

  it('rejects with an AbortError when the signal fires, and the engine sees the disconnect', async () => {
    const s = await serve(() => {});
    const ac = new AbortController();
    const p = client(s.url).postJson('/v1/completions', {}, { requestId: 'x', signal: ac.signal });
    await until(() => s.connections === 1, 'the request');
    ac.abort();
    const err = await p.catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    await until(() => s.closes === 1, 'the engine to see the close');
    await expect(client(s.url).postJson('/v1/completions', {}, { requestId: 'x', signal: AbortSignal.abort() })).rejects.toSatisfy(isAbortError);
  });
});

describe('EngineClient.postStream', () => {
  it('yields the events verbatim, pulled', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n: ping\n\n');
      res.write('data: {"i":1}\r\n\r\ndata: [DONE]\n\n');
      res.end();
    });
    const events = await collect(await client(s.url).postStream('/v1/completions', { stream: true }, { requestId: 'x' }));
    expect(events.map((e) => ({ data: e.data, json: e.json }))).toEqual([
      { data: '{"i":0}', json: { i: 0 } },
      { data: '{"i":1}', json: { i: 1 } },
      { data: '[DONE]' },
    ]);
  });

  it('nextBatch() returns every event one read completed; next() and nextBatch() mix without loss', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"i":0}\n\ndata: {"i":1}\n\ndata: {"i":2}\n\ndata: [DONE]\n\n');
    });
    const stream = await client(s.url).postStream('/v1/completions', { stream: true }, { requestId: 'x' });
    const first = await stream.next();
    expect({ data: first.value.data, json: first.value.json }).toEqual({ data: '{"i":0}', json: { i: 0 } });
    const seen: string[] = [];
    for (let b = await stream.nextBatch(); b !== null; b = await stream.nextBatch()) seen.push(...b.map((e) => e.data));
    expect(seen).toEqual(['{"i":1}', '{"i":2}', '[DONE]']);
    expect(stream.finished).toBe(true);
  });

  it('a slow consumer pauses the engine: the server cannot write ahead without bound', async () => {
    const total = 20_000;
    const payload = 'x'.repeat(1000);
    let written = 0;
    let blockedAt = -1;
    const s = await serve(async (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < total; i++) {
        written++;
        if (!res.write(`data: {"i":${i},"p":"${payload}"}\n\n`)) {
          if (blockedAt < 0) blockedAt = i;
          await new Promise((r) => res.once('drain', r));
        }
      }
      res.end('data: [DONE]\n\n');
    });
    const stream = await client(s.url).postStream('/v1/completions', { stream: true }, { requestId: 'x' });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value?.json).toMatchObject({ i: 0 });
    await until(() => blockedAt >= 0, 'the server to block');
    await new Promise((r) => setTimeout(r, 100));
    // ~20 MB would have been written by now without backpressure; socket buffers hold a few MB at most.
    expect(written).toBeLessThan(total / 2);
    let n = 1;
    let last: unknown;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      n++;
      last = r.value.data;
    }
    expect(n).toBe(total + 1);
    expect(last).toBe('[DONE]');
  });

  it('cancel() closes the connection so the engine sees the abandon', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n');
    });
    const stream = await client(s.url).postStream('/v1/completions', {}, { requestId: 'x' });
    for await (const ev of stream) {
      expect(ev.json).toEqual({ i: 0 });
      break; // calls return(), which cancels
    }
    await until(() => s.closes === 1, 'the engine to see the close');
    expect(stream.finished).toBe(true);
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/only once/);
  });

  it('a stream cancelled before its first read closes quietly', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n');
    });
    const stream = await client(s.url).postStream('/v1/completions', {}, { requestId: 'x' });
    stream.cancel(); // no uncaught 'error' event (vitest fails the run on one)
    await until(() => s.closes === 1, 'the engine to see the close');
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it('an abort mid-stream rejects next() with an AbortError', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n');
    });
    const ac = new AbortController();
    const stream = await client(s.url).postStream('/v1/completions', {}, { requestId: 'x', signal: ac.signal });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    await until(() => s.closes === 1, 'the engine to see the close');
  });

  it('a connection that dies mid-stream is engine_stream_broken; a silent one hits the idle timeout', async () => {
    const broken = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const s1 = await client(broken.url).postStream('/v1/completions', {}, { requestId: 'x' });
    await expect(collect(s1)).rejects.toMatchObject({ status: 502, failure: 'engine_stream_broken' });

    const silent = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"i":0}\n\n');
    });
    const s2 = await client(silent.url, { idleTimeoutMs: 150 }).postStream('/v1/completions', {}, { requestId: 'x' });
    await expect(collect(s2)).rejects.toMatchObject({ status: 504, failure: 'engine_idle_timeout' });
  });

  it('an error status or a JSON answer to a stream request is an EngineError', async () => {
    const s = await serve((req, _body, res) => {
      if (req.url === '/v1/completions') res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"boom"}}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"error":"not streaming"}');
    });
    await expect(client(s.url).postStream('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      status: 500,
      body: { error: { message: 'boom' } },
    });
    await expect(client(s.url).postStream('/v1/chat/completions', {}, { requestId: 'x' })).rejects.toMatchObject({
      status: 502,
      failure: 'engine_bad_response',
      body: { error: 'not streaming' },
    });
  });

  it('an oversized event is a bad response and closes the connection', async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${'y'.repeat(17 * 1024 * 1024)}`);
    });
    const stream = await client(s.url).postStream('/v1/completions', {}, { requestId: 'x' });
    await expect(collect(stream)).rejects.toMatchObject({ failure: 'engine_bad_response' });
    await until(() => s.closes === 1, 'the close');
  });
});

/**
 * A raw engine that never reads its first `resets` connections and resets each (a close with the
 * request unread: what an idle close meeting a request does) once `reset()` is called; later
 * connections are answered with a JSON body per request it read.
 */
async function resettingEngine(resets: number) {
  const held: Socket[] = [];
  const e = { url: '', connections: 0, requestsRead: 0, reset: () => setImmediate(() => held.splice(0).forEach((s) => s.destroy())) };
  const server = createNetServer({ pauseOnConnect: true }, (sock) => {
    if (++e.connections <= resets) {
      held.push(sock); // paused: the request stays unread in the kernel's queue
      return;
    }
    let buf = Buffer.alloc(0);
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      const length = Number(/content-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (end < 0 || buf.length < end + 4 + length) return;
      buf = buf.subarray(end + 4 + length);
      e.requestsRead++;
      const answer = '{"ok":true}';
      sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\n\r\n${answer}`);
    });
    sock.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  e.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  open.push({
    close: () => {
      held.forEach((s) => s.destroy());
      return new Promise<void>((r) => server.close(() => r()));
    },
  });
  return e;
}

describe('a connection the engine resets before answering', () => {
  it('sends the request again once, on a new connection, when the engine reset it unread', async () => {
    const engine = await resettingEngine(1);
    let sent = 0;
    const answer = await client(engine.url).postJson(
      '/v1/completions',
      { prompt: 'p' },
      {
        requestId: 'r',
        onSent: () => {
          sent++;
          engine.reset();
        },
      },
    );
    expect(answer).toEqual({ ok: true });
    expect({ connections: engine.connections, requestsRead: engine.requestsRead, sent }).toEqual({ connections: 2, requestsRead: 1, sent: 1 });
  });

  it('a second reset is a 502 that may have been accepted, with no third attempt', async () => {
    const engine = await resettingEngine(Infinity);
    let sent = 0;
    const call = client(engine.url).postStream(
      '/v1/completions',
      {},
      {
        requestId: 'r',
        onSent: () => {
          sent++;
          engine.reset();
        },
      },
    );
    // The retry's onSent is not called (the first write's was): close the retry's connection once
    // it is there. Reset or orderly close (if its request had not arrived yet), it is not retried.
    await until(() => engine.connections === 2, 'the retry connecting');
    engine.reset();
    await expect(call).rejects.toMatchObject({ status: 502, failure: 'engine_unreachable', mayHaveAccepted: true });
    expect({ connections: engine.connections, sent }).toEqual({ connections: 2, sent: 1 });
  });

  it('an engine that read the request and closed the connection is not sent it again', async () => {
    let read = 0;
    const dropping = await serve((req) => {
      read++;
      req.socket.destroy();
    });
    await expect(client(dropping.url).postJson('/v1/completions', {}, { requestId: 'x' })).rejects.toMatchObject({ status: 502, mayHaveAccepted: true });
    expect({ read, connections: dropping.connections }).toEqual({ read: 1, connections: 1 });
  });

  it('tells a reset from an orderly close and from a request never written', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    expect(isResetBeforeAnswer(e('ECONNRESET'))).toBe(true);
    expect(isResetBeforeAnswer(e('EPIPE'))).toBe(true);
    expect(isResetBeforeAnswer(e('UND_ERR_SOCKET'))).toBe(false);
    expect(isResetBeforeAnswer(e('UND_ERR_HEADERS_TIMEOUT'))).toBe(false);
    expect(isResetBeforeAnswer(new RequestNotSentError(e('ECONNRESET')))).toBe(false);
    expect(isResetBeforeAnswer(undefined)).toBe(false);
  });
});

describe('options and errors', () => {
  it('refuses bad base URLs and options', () => {
    expect(() => new EngineClient('localhost:8000')).toThrow(TypeError);
    expect(() => new EngineClient('ftp://h')).toThrow(/http or https/);
    expect(() => new EngineClient('http://h/?q=1')).toThrow(/query/);
    expect(() => new EngineClient(5 as unknown as string)).toThrow(TypeError);
    expect(() => new EngineClient('http://h', { connectTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => new EngineClient('http://h', { firstByteTimeoutMs: 1.5 })).toThrow(RangeError);
    expect(() => new EngineClient('http://h', { connections: '2' as unknown as number })).toThrow(TypeError);
    expect(() => new EngineClients({ idleTimeoutMs: -1 })).toThrow(RangeError);
  });

  it('closes an idle connection itself before the 5 s after which uvicorn engines close theirs', async () => {
    const s = await serve((_req, _body, res) => {
      res.end('{}');
    });
    // No idle limit on the engine's side and no Keep-Alive hint (as uvicorn sends none): only the
    // client can close the connection.
    s.server.keepAliveTimeout = 0;
    let closedByClient = 0;
    s.server.on('connection', (sock: Socket) => sock.on('end', () => closedByClient++));
    const c = client(s.url);
    await c.postJson('/v1/completions', {}, { requestId: 'r1' });
    await until(() => closedByClient === 1, 'the client closing its idle connection', 5_000);
  }, 10_000);

  it('keeps an idle connection for keepAliveTimeoutMs', async () => {
    const s = await serve((_req, _body, res) => {
      res.end('{}');
    });
    s.server.keepAliveTimeout = 0;
    const c = client(s.url, { keepAliveTimeoutMs: 3_000 });
    await c.postJson('/v1/completions', {}, { requestId: 'r1' });
    await new Promise((r) => setTimeout(r, 1_000));
    await c.postJson('/v1/completions', {}, { requestId: 'r2' });
    expect(s.connections).toBe(1);
  });

  it('maps undici failure codes', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    expect(translateUndiciError(e('UND_ERR_CONNECT_TIMEOUT'), undefined, 'u', false)).toMatchObject({ status: 504, failure: 'engine_connect_timeout' });
    expect(translateUndiciError(e('UND_ERR_HEADERS_TIMEOUT'), undefined, 'u', false)).toMatchObject({ failure: 'engine_first_byte_timeout' });
    expect(translateUndiciError(e('UND_ERR_BODY_TIMEOUT'), undefined, 'u', true)).toMatchObject({ failure: 'engine_idle_timeout' });
    expect(translateUndiciError(e('ECONNREFUSED'), undefined, 'u', false)).toMatchObject({ status: 502, failure: 'engine_unreachable' });
    expect(translateUndiciError(e('UND_ERR_SOCKET'), undefined, 'u', true)).toMatchObject({ failure: 'engine_stream_broken' });
    // Whether the engine may have accepted the request: not when the connection itself failed,
    // nor when undici lost the connection before it wrote the request; after that, it may have.
    expect(translateUndiciError(e('UND_ERR_CONNECT_TIMEOUT'), undefined, 'u', false)).toMatchObject({ mayHaveAccepted: false });
    expect(translateUndiciError(e('ENOTFOUND'), undefined, 'u', false)).toMatchObject({ mayHaveAccepted: false });
    expect(translateUndiciError(new RequestNotSentError(e('ECONNRESET')), undefined, 'u', false)).toMatchObject({
      failure: 'engine_unreachable',
      mayHaveAccepted: false,
    });
    expect(translateUndiciError(e('ECONNRESET'), undefined, 'u', false)).toMatchObject({ failure: 'engine_unreachable', mayHaveAccepted: true });
    expect(translateUndiciError(e('UND_ERR_HEADERS_TIMEOUT'), undefined, 'u', false)).toMatchObject({ mayHaveAccepted: true });
    expect(isAbortError(translateUndiciError(e('UND_ERR_SOCKET'), AbortSignal.abort(), 'u', true))).toBe(true);
  });

  it('EngineClients keeps one client per base URL', async () => {
    const clients = new EngineClients();
    open.push(clients);
    expect(clients.get('http://127.0.0.1:1')).toBe(clients.get('http://127.0.0.1:1'));
    expect(clients.get('http://127.0.0.1:1')).not.toBe(clients.get('http://127.0.0.1:2'));
    await clients.drop('http://127.0.0.1:1');
  });
});
