// The uWebSockets.js frontend. uWS rules this file keeps: an HttpResponse must never be touched
// after onAborted fired or after it was ended; writes from async continuations go inside
// res.cork(); write() returning false means "buffered, stop writing until onWritable" (the data is
// kept by uWS and never resent). Every request is answered exactly once.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { createSecureContext } from 'node:tls';
import uWS from 'uWebSockets.js';
import { Cancellation } from '../../util/cancellation.js';
import { isShortVisibleAscii } from '../../util/validate.js';
import { listenOn } from '../../util/uws-listen.js';
import { errorReply, HttpError, notFound } from '../call/errors.js';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { BoundedBodyBuffer } from '../call/body.js';
import { FrameBatcher, isAdminListenerPath, type FrameStream, type HttpCall, type HttpReply } from '../call/call.js';
import { beginTimes, publishTimes, type PendingTimes } from './request-times.js';

/** What the frontend needs from the router. */
export interface CallHandler {
  handle(call: HttpCall): Promise<HttpReply>;
  readonly config: { readonly maxBodyBytes: number };
}

export interface ListenOptions {
  host?: string;
  /** 0 lets the OS choose. */
  port?: number;
  /**
   * What this listener answers: every route (the default), every route but the admin API
   * ('public', whose admin requests get a 403 saying `adminElsewhere`), or the admin API alone.
   */
  routes?: 'all' | 'public' | 'admin';
  /** With routes 'public': where the admin API is served instead. */
  adminElsewhere?: string;
  /**
   * Share the port with other processes that listen on it with SO_REUSEPORT (the kernel splits
   * connections between them). Default false: a port another process holds fails the listen.
   */
  reusePort?: boolean;
  /** Called when the port is held only by the closed connections of a process that ended (TIME_WAIT): the listen waits for it. */
  onWaitForRelease?(): void;
  /** HTTPS with these PEM files (certificate chain and private key). */
  tls?: { certFile: string; keyFile: string };
}

export interface RunningServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** Stops accepting connections; open ones keep being served (a drain), until close(). */
  stopAccepting(): void;
  close(): Promise<void>;
}

/** Per-response state shared by the handler, the pump and the uWS callbacks. */
interface ResponseState {
  aborted: boolean;
  ended: boolean;
  controller: Cancellation;
  resumeWritable?: () => void;
  stream?: FrameStream;
  /** Timestamps for a benchmark's probe (request-times.ts); undefined unless it subscribes. */
  times?: PendingTimes;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

export async function listenUws(handler: CallHandler, opts: ListenOptions = {}): Promise<RunningServer> {
  const host = opts.host ?? '127.0.0.1';
  const routes = opts.routes ?? 'all';
  if (routes !== 'all' && routes !== 'public' && routes !== 'admin') throw new TypeError(`routes must be 'all', 'public' or 'admin', got '${String(routes)}'`);
  const refusal = routes === 'all' ? undefined : refusalReply(routes, opts.adminElsewhere);
  if (opts.tls) await checkTls(opts.tls);
  const app = opts.tls ? uWS.SSLApp({ cert_file_name: opts.tls.certFile, key_file_name: opts.tls.keyFile }) : uWS.App();
  app.any('/*', (res, req) => {
    if (refusal) {
      const path = req.getUrl();
      const admin = isAdminListenerPath(path);
      if (admin !== (routes === 'admin')) return refuse(res, req, refusal);
    }
    onRequest(handler, res, req);
  });
  const port = opts.port ?? 0;
  const token = await listenOn(app, host, port, opts.reusePort === true, routes === 'admin' ? 'admin API' : 'router', {
    onWaitForRelease: opts.onWaitForRelease,
  });
  return runningServer(app, token, host, uWS.us_socket_local_port(token), opts.tls !== undefined);
}

/** The certificate and key load and match, checked by Node before uWS gets them (it would only fail to listen). */
async function checkTls(tls: { certFile: string; keyFile: string }): Promise<void> {
  const read = async (path: string, what: string) => {
    try {
      return await readFile(path);
    } catch (err) {
      throw new Error(`cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const cert = await read(tls.certFile, 'certificate');
  const key = await read(tls.keyFile, 'key');
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`the TLS certificate ${tls.certFile} and key ${tls.keyFile} are not a usable pair: ${(err as Error).message}`);
  }
}

function runningServer(app: TemplatedApp, token: us_listen_socket, host: string, port: number, tls: boolean): RunningServer {
  let closed = false;
  let accepting = true;
  const stopAccepting = () => {
    if (!accepting) return;
    accepting = false;
    uWS.us_listen_socket_close(token);
  };
  return {
    host,
    port,
    url: `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    stopAccepting,
    async close() {
      if (closed) return;
      closed = true;
      stopAccepting();
      // close() (present at runtime, absent from the typings) also drops keep-alive connections,
      // whose onAborted handlers cancel any stream still running.
      (app as unknown as { close?: () => void }).close?.();
    },
  };
}

function onRequest(handler: CallHandler, res: HttpResponse, req: HttpRequest): void {
  const state: ResponseState = { aborted: false, ended: false, controller: new Cancellation(), times: undefined };
  res.onAborted(() => {
    state.aborted = true;
    state.controller.abort();
    state.stream?.cancel();
    state.resumeWritable?.();
  });

  // HttpRequest is only valid during this callback: copy what the router needs now.
  const method = req.getMethod().toUpperCase();
  const query = req.getQuery();
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    headers[k] = v;
  });
  state.times = beginTimes(headers['x-request-id']);
  const path = req.getUrl();
  const call: HttpCall = {
    method,
    url: query ? `${path}?${query}` : path,
    headers,
    // Only the admin API and the live page look at the peer (reading it costs a native call per request).
    remoteAddress: isAdminListenerPath(path) ? remoteAddressOf(res) : undefined,
    signal: state.controller.signal,
  };

  if (BODYLESS.has(method)) {
    dispatch(handler, call, res, state);
    return;
  }
  const body = new BoundedBodyBuffer(handler.config.maxBodyBytes);
  let dispatched = false;
  res.onData((chunk, isLast) => {
    if (dispatched) return;
    const withinLimit = body.push(chunk);
    // Over the limit: answer 413 now (the router sees limit + 1 bytes) instead of buffering more.
    if (isLast || !withinLimit) {
      dispatched = true;
      if (state.times) state.times.bodyNs = process.hrtime.bigint();
      call.body = body.bytes();
      dispatch(handler, call, res, state);
    }
  });
}

function dispatch(handler: CallHandler, call: HttpCall, res: HttpResponse, state: ResponseState): void {
  handler.handle(call).then(
    (reply) => send(res, reply, state),
    (err: unknown) => send(res, internalErrorReply(err), state),
  );
}

function send(res: HttpResponse, reply: HttpReply, state: ResponseState): void {
  if (state.aborted) {
    reply.stream?.cancel();
    return;
  }
  if (!reply.stream) {
    res.cork(() => {
      writeHead(res, reply);
      state.ended = true;
      // A 413 answered before the upload finished: close the connection rather than read the rest.
      // A draining router asks for the connection to be closed too (its Connection: close says so).
      res.end(reply.body ?? '', reply.status === 413 || reply.headers.connection === 'close');
    });
    if (state.times) publishTimes(state.times, reply.status);
    return;
  }
  state.stream = reply.stream;
  res.onWritable(() => {
    const resume = state.resumeWritable;
    state.resumeWritable = undefined;
    resume?.();
    return true;
  });
  void pump(res, reply, reply.stream, state);
}

async function pump(res: HttpResponse, reply: HttpReply, stream: FrameStream, state: ResponseState): Promise<void> {
  const batcher = new FrameBatcher(stream);
  let headWritten = false;
  try {
    for (;;) {
      const { text, done } = await batcher.nextBatch();
      if (state.aborted) return;
      let accepted = true;
      // One cork per batch: the head (first time), the frames and, at the end, the last chunk.
      res.cork(() => {
        if (!headWritten) writeHead(res, reply);
        headWritten = true;
        if (done) {
          state.ended = true;
          res.end(text);
          if (state.times) publishTimes(state.times, reply.status);
        } else {
          accepted = res.write(text);
        }
      });
      if (done) return;
      if (!accepted) {
        // Slow client: stop pulling from the engine until the socket drains.
        await new Promise<void>((resolve) => {
          state.resumeWritable = resolve;
        });
        if (state.aborted) return;
      }
    }
  } finally {
    // Normal end: a no-op; any other exit (abort, failure) cancels the engine legs.
    stream.cancel();
    if (!state.aborted && !state.ended) {
      state.ended = true;
      res.cork(() => {
        if (!headWritten) writeHead(res, reply);
        res.end();
      });
    }
  }
}

/** Status lines by status code, built once each (the same few are written on every response). */
const statusLines = new Map<number, string>();

/**
 * uWebSockets.js closes a keep-alive connection idle for about 10 s (HTTP_IDLE_TIMEOUT_S, compiled
 * in; its timer ticks every 4 s, so 8 to 12 s), with a FIN. A client that writes a request as that
 * close happens gets a reset, and the request is lost before the router saw it. So every response
 * advertises a shorter idle time: clients that honour `Keep-Alive: timeout` (undici, so Node's
 * fetch and the openai npm client) close first. docs/operations.md lists the clients that ignore it.
 */
export const ADVERTISED_IDLE_TIMEOUT_S = 5;
const KEEP_ALIVE = `timeout=${ADVERTISED_IDLE_TIMEOUT_S}`;

function writeHead(res: HttpResponse, reply: HttpReply): void {
  let line = statusLines.get(reply.status);
  if (line === undefined) {
    line = `${reply.status} ${STATUS_CODES[reply.status] ?? 'Unknown'}`;
    if (STATUS_CODES[reply.status] !== undefined) statusLines.set(reply.status, line); // bounded: the known codes
  }
  res.writeStatus(line);
  const headers = reply.headers;
  for (const k in headers) {
    // uWS computes content-length itself on end(); a duplicate would corrupt the response.
    if (k !== 'content-length' && Object.hasOwn(headers, k)) res.writeHeader(k, headers[k]);
  }
  if (headers.connection !== 'close') res.writeHeader('keep-alive', KEEP_ALIVE);
}

function remoteAddressOf(res: HttpResponse): string {
  const text = Buffer.from(res.getRemoteAddressAsText()).toString();
  // uWS prints IPv4-mapped IPv6 peers in full hex form; normalise loopback to the dotted form.
  if (text === '0000:0000:0000:0000:0000:ffff:7f00:0001') return '127.0.0.1';
  return text;
}

function refusalReply(routes: 'public' | 'admin', adminElsewhere: string | undefined): HttpReply {
  return errorReply(
    routes === 'public'
      ? new HttpError(403, 'permission_error', 'admin_not_here', `the admin API is not served on this listener${adminElsewhere ? `: ${adminElsewhere}` : ''}`)
      : notFound('this listener serves the admin API (/admin) and the live page (/dashboard) only', 'unknown_route'),
  );
}

/** Answers at once; a request body still arriving is not read (the connection is closed after). */
function refuse(res: HttpResponse, req: HttpRequest, reply: HttpReply): void {
  const bodyless = BODYLESS.has(req.getMethod().toUpperCase());
  const id = req.getHeader('x-request-id');
  const requestId = isShortVisibleAscii(id) ? id : randomUUID();
  res.cork(() => {
    writeHead(res, reply);
    res.writeHeader('x-request-id', requestId);
    res.end(reply.body, !bodyless);
  });
}

function internalErrorReply(err: unknown): HttpReply {
  const message = err instanceof Error ? err.message : String(err);
  return {
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { message: `internal error: ${message}`, type: 'internal_error', code: 'internal_error' } }),
  };
}
