// A (req, res[, next]) handler for node:http and Express (and Fastify through its raw objects):
// the same behaviour as the uWebSockets.js frontend, with Node's own backpressure (write() false
// -> wait for 'drain') and disconnect detection ('close' before the response finished).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BodySource } from '../../call/body.js';
import { FrameBatcher, type FrameStream, type HttpCall, type HttpReply } from '../../call/call.js';
import { withFields } from '../../../util/objects.js';

export interface NodeCallHandler {
  handle(call: HttpCall): Promise<HttpReply>;
  /** Whether the router serves this method and path (unknown ones go to Express's next()). */
  serves?(method: string, path: string): boolean;
}

export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/**
 * `http.createServer(nodeHandler(router))`, or `app.use(nodeHandler(router))` in Express, where
 * paths the router does not serve fall through to `next()`. A body already parsed by
 * express.json() is used as is.
 */
export function nodeHandler(router: NodeCallHandler): NodeHandler {
  return (req, res, next) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const url = req.url ?? '/';
    if (next && router.serves && !router.serves(method, url.split('?', 1)[0])) {
      next();
      return;
    }
    const controller = new AbortController();
    const conn: Connection = { gone: false, controller };
    res.on('close', () => {
      if (res.writableFinished) return;
      conn.gone = true;
      controller.abort();
      conn.stream?.cancel();
      conn.resume?.();
    });
    const call: HttpCall = {
      method,
      url,
      headers: flatHeaders(req),
      body: bodyOf(req),
      remoteAddress: req.socket?.remoteAddress,
      signal: controller.signal,
    };
    router.handle(call).then(
      (reply) => send(res, reply, conn),
      (err: unknown) => send(res, internalError(err), conn),
    );
  };
}

interface Connection {
  gone: boolean;
  controller: AbortController;
  stream?: FrameStream;
  resume?: () => void;
}

function send(res: ServerResponse, reply: HttpReply, conn: Connection): void {
  if (conn.gone || res.destroyed) {
    reply.stream?.cancel();
    return;
  }
  if (!reply.stream) {
    const body = reply.body ?? '';
    res.writeHead(reply.status, withFields(reply.headers, { 'content-length': String(Buffer.byteLength(body)) }));
    res.end(body);
    return;
  }
  conn.stream = reply.stream;
  res.writeHead(reply.status, reply.headers);
  res.flushHeaders();
  void pump(res, reply.stream, conn);
}

async function pump(res: ServerResponse, stream: FrameStream, conn: Connection): Promise<void> {
  try {
    const batcher = new FrameBatcher(stream);
    for (;;) {
      const { text, done } = await batcher.nextBatch();
      if (conn.gone) return;
      if (done) {
        res.end(text);
        return;
      }
      if (!res.write(text)) {
        // Slow client: stop pulling from the engine until the socket drains (or closes).
        await new Promise<void>((resolve) => {
          conn.resume = resolve;
          res.once('drain', resolve);
        });
        conn.resume = undefined;
        if (conn.gone) return;
      }
    }
  } finally {
    stream.cancel();
    if (!conn.gone && !res.writableEnded) res.end();
  }
}

function flatHeaders(req: IncomingMessage): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.headers)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The raw stream, or the body a middleware (express.json(), express.raw()) already read. */
function bodyOf(req: IncomingMessage): BodySource {
  const parsed = (req as { body?: unknown }).body;
  if (parsed !== undefined && (req.readableEnded || !req.readable)) {
    if (parsed instanceof Uint8Array) return parsed;
    if (typeof parsed === 'string') return Buffer.from(parsed);
    return Buffer.from(JSON.stringify(parsed));
  }
  return req;
}

function internalError(err: unknown): HttpReply {
  const message = err instanceof Error ? err.message : String(err);
  return {
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { message: `internal error: ${message}`, type: 'internal_error', code: 'internal_error' } }),
  };
}
