// A small HTTP layer over uWebSockets.js for the simulated worker: exact-path routes, bounded
// bodies, JSON replies and push-style SSE with backpressure. uWS rules kept here, once: every
// write is corked, nothing touches a response after it was aborted or ended, and a write() that
// returns false means "paused" (the chunk is buffered by uWS, never resent): later chunks queue
// until onWritable.
import uWS from 'uWebSockets.js';
import { OpenAiError, errorJson } from './errors.js';
import { listenOn } from '../../util/uws-listen.js';

export interface RequestInfo {
  /** Upper-case method. */
  method: string;
  /** Path without the query string. */
  path: string;
  query: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
}

export type Handler = (ex: HttpExchange) => void | Promise<void>;

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  handler: Handler;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  routes: readonly Route[];
  /** Larger bodies get 413. */
  maxBodyBytes?: number;
  /** A label for bind errors ("HTTP", "KV side channel"). */
  label?: string;
  /** Share the port with other processes (SO_REUSEPORT); default: a busy port is an error. */
  reusePort?: boolean;
}

export interface HttpServer {
  readonly port: number;
  /**
   * A graceful stop's first half: no new connections, and new requests on open ones (health checks
   * included) get 503 with Connection: close; resolves once the exchanges in flight have finished,
   * or after `timeoutMs`, when those still open are cut (a stream ends with an error event).
   */
  drain(timeoutMs: number): Promise<{ inFlight: number; cut: number }>;
  /** Stops listening and closes every open connection (in-flight exchanges see an abort). */
  close(): void;
}

const DEFAULT_MAX_BODY = 8 * 1024 * 1024;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

const statusLine = (status: number) => `${status} ${STATUS_TEXT[status] ?? 'Status'}`;

/** One request and its response. Safe to call after an abort: writes become no-ops. */
export class HttpExchange {
  body: Uint8Array = new Uint8Array(0);
  private state: 'open' | 'streaming' | 'done' | 'aborted' = 'open';
  private readonly abortListeners: (() => void)[] = [];
  private readonly pending: string[] = [];
  private paused = false;
  private endWhenDrained = false;
  private pauseCount = 0;

  constructor(
    private readonly res: uWS.HttpResponse,
    readonly request: RequestInfo,
    /** Called once, when the reply completed or the client went away. */
    private readonly onSettled?: (ex: HttpExchange) => void,
  ) {}

  /** True once the client went away (or the server closed the connection). */
  get aborted(): boolean {
    return this.state === 'aborted';
  }

  /** True once a reply was completed or the client went away: nothing more can be sent. */
  get finished(): boolean {
    return this.state === 'done' || this.state === 'aborted';
  }

  /** How many times a write hit backpressure and the stream paused. */
  get pauses(): number {
    return this.pauseCount;
  }

  get streaming(): boolean {
    return this.state === 'streaming';
  }

  /** Runs `fn` when the client disconnects before the reply completed (at once if it already did). */
  onAbort(fn: () => void): void {
    if (this.state === 'aborted') fn();
    else this.abortListeners.push(fn);
  }

  json(status: number, value: unknown, headers: Record<string, string> = {}): void {
    this.send(status, JSON.stringify(value), { 'content-type': 'application/json', ...headers });
  }

  error(err: OpenAiError, headers: Record<string, string> = {}): void {
    this.send(err.status, errorJson(err), { 'content-type': 'application/json', ...err.headers, ...headers });
  }

  send(status: number, body: string, headers: Record<string, string>): void {
    if (this.state !== 'open') return;
    this.settle('done');
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v);
      this.res.end(body);
    });
  }

  /** Sends the status and headers of an event stream; then `sse()` each payload and `endStream()`. */
  startStream(headers: Record<string, string> = {}): void {
    if (this.state !== 'open') return;
    this.state = 'streaming';
    this.res.cork(() => {
      this.res.writeStatus(statusLine(200));
      this.res.writeHeader('content-type', 'text/event-stream');
      this.res.writeHeader('cache-control', 'no-cache');
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v);
    });
  }

  /** One server-sent event: `data: <payload>\n\n`. */
  sse(payload: string): void {
    this.write(`data: ${payload}\n\n`);
  }

  endStream(): void {
    if (this.state !== 'streaming') return;
    if (this.paused) {
      this.endWhenDrained = true;
      return;
    }
    this.settle('done');
    this.res.cork(() => this.res.end());
  }

  /** Drops the connection without a proper end (a crashing engine): the client sees a reset. */
  kill(): void {
    if (this.finished) return;
    this.res.close(); // runs onAborted, which marks this exchange aborted
  }

  /** @internal */
  markAborted(): void {
    if (this.finished) return;
    this.settle('aborted');
    this.pending.length = 0;
    for (const fn of this.abortListeners.splice(0)) fn();
  }

  private settle(state: 'done' | 'aborted'): void {
    this.state = state;
    this.onSettled?.(this);
  }

  private write(chunk: string): void {
    if (this.state !== 'streaming') return;
    if (this.paused) {
      this.pending.push(chunk);
      return;
    }
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(chunk);
    });
    if (!ok) this.pause();
  }

  private pause(): void {
    this.paused = true;
    this.pauseCount++;
    this.res.onWritable(() => {
      if (this.state !== 'streaming') return true;
      let ok = true;
      this.res.cork(() => {
        while (ok && this.pending.length > 0) ok = this.res.write(this.pending.shift() as string);
        if (ok) {
          this.paused = false;
          if (this.endWhenDrained) {
            this.settle('done');
            this.res.end();
          }
        }
      });
      return ok; // false: still backpressured, uWS calls again when writable
    });
  }
}

/** Binds and serves; rejects with a clear message when the port cannot be bound. */
export function listenHttp(opts: HttpServerOptions): Promise<HttpServer> {
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const app = uWS.App();
  const byPath = new Map<string, Map<string, Handler>>();
  for (const r of opts.routes) {
    if (!byPath.has(r.path)) byPath.set(r.path, new Map());
    (byPath.get(r.path) as Map<string, Handler>).set(r.method, r.handler);
  }

  const open = new Set<HttpExchange>();
  const settled = (ex: HttpExchange) => {
    open.delete(ex);
    if (open.size === 0) for (const wake of idleWaiters.splice(0)) wake();
  };
  const idleWaiters: Array<() => void> = [];
  let draining = false;

  app.any('/*', (res, req) => {
    if (draining && req.getUrl() !== '/admin/faults') {
      // Connection: close, and no body is read: the client takes its next request elsewhere.
      res.cork(() => {
        res.writeStatus(statusLine(503));
        res.writeHeader('content-type', 'application/json');
        res.writeHeader('retry-after', '1');
        res.end(errorJson(new OpenAiError(503, 'the worker is shutting down', 'service_unavailable', 'worker_draining')), true);
      });
      return;
    }
    const request: RequestInfo = {
      method: req.getMethod().toUpperCase(),
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      headers: {},
    };
    req.forEach((k, v) => {
      request.headers[k] = v;
    });
    const ex = new HttpExchange(res, request, settled);
    open.add(ex);
    res.onAborted(() => ex.markAborted());

    const methods = byPath.get(request.path);
    const handler = methods?.get(request.method);
    if (!handler) {
      if (methods) ex.error(new OpenAiError(405, `method ${request.method} not allowed on ${request.path}`, 'invalid_request_error', 'method_not_allowed'));
      else ex.error(new OpenAiError(404, `no route for ${request.method} ${request.path}`, 'invalid_request_error', 'not_found'));
      return;
    }
    if (request.method === 'GET') {
      run(handler, ex);
      return;
    }
    readBody(res, maxBody, (body) => {
      if (body === null) {
        ex.error(new OpenAiError(413, `request body exceeds the limit of ${maxBody} bytes`, 'invalid_request_error', 'payload_too_large'));
        return;
      }
      ex.body = body;
      run(handler, ex);
    });
  });

  return listenOn(app, opts.host, opts.port, opts.reusePort === true, `the worker's ${opts.label ?? 'HTTP'} server`).then((listenSocket) => {
    let closed = false;
    let listening = true;
    const stopListening = () => {
      if (listening) uWS.us_listen_socket_close(listenSocket);
      listening = false;
    };
    return {
      port: uWS.us_socket_local_port(listenSocket),
      async drain(timeoutMs: number) {
        draining = true;
        stopListening();
        const inFlight = open.size;
        let timer: NodeJS.Timeout | undefined;
        const idle =
          open.size === 0
            ? true
            : await new Promise<boolean>((resolve) => {
                idleWaiters.push(() => resolve(true));
                timer = setTimeout(() => resolve(false), timeoutMs);
              });
        clearTimeout(timer);
        let cut = 0;
        if (!idle) {
          const cutError = new OpenAiError(
            503,
            'the worker shut down before this request finished (its drain timeout ran out)',
            'service_unavailable',
            'worker_shutting_down',
          );
          for (const ex of [...open]) {
            cut++;
            if (ex.streaming) {
              ex.sse(errorJson(cutError));
              ex.endStream();
            } else {
              ex.error(cutError);
            }
          }
        }
        return { inFlight, cut };
      },
      close() {
        if (closed) return;
        closed = true;
        stopListening();
        // Not in the typings of this uWS build, but present: closes every open connection.
        (app as unknown as { close?: () => void }).close?.();
      },
    };
  });
}

function readBody(res: uWS.HttpResponse, limit: number, done: (body: Uint8Array | null) => void): void {
  const chunks: Buffer[] = [];
  let total = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (!over) {
      total += chunk.byteLength;
      if (total > limit) over = true;
      // uWS neuters the ArrayBuffer after the callback: copy it.
      else chunks.push(Buffer.from(chunk.slice(0)));
    }
    if (isLast) done(over ? null : Buffer.concat(chunks, total));
  });
}

function run(handler: Handler, ex: HttpExchange): void {
  const fail = (err: unknown) => {
    if (ex.finished) return;
    if (ex.streaming) {
      ex.sse(errorJson(toOpenAiError(err)));
      ex.endStream();
      return;
    }
    ex.error(toOpenAiError(err));
  };
  try {
    const result = handler(ex);
    if (result instanceof Promise) result.catch(fail);
  } catch (err) {
    fail(err);
  }
}

/** Bad values reported by the engine model (TypeError/RangeError) are the client's 400. */
export function toOpenAiError(err: unknown): OpenAiError {
  if (err instanceof OpenAiError) return err;
  if (err instanceof TypeError || err instanceof RangeError) return new OpenAiError(400, err.message, 'invalid_request_error', 'invalid_value');
  return new OpenAiError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`, 'server_error', 'internal_error');
}
