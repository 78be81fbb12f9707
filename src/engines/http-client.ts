// OpenAI-style HTTP calls to one engine over a keep-alive undici Pool: a JSON call (prefill legs,
// non-streamed answers) and an SSE call whose events are pulled (a batch per socket read), so a
// consumer that stops pulling stops the socket read (engine-response.ts pauses the connection).
// Every failure becomes an EngineError (or an AbortError when the caller's signal fired).
import { Pool, type Dispatcher } from 'undici';
import type { SignalLike } from '../util/cancellation.js';
import { expectInteger, expectObject } from '../util/validate.js';
import { EngineError, abortError, transportError } from './errors.js';
import { EventCursor, type EventBatchSource } from './event-batch.js';
import { dispatchRequest, RequestNotSentError, type ResponseBody, type ResponseHead } from './engine-response.js';
import { engineBody } from './json.js';
import { parseBaseUrl } from './base-url.js';
import { SseParser } from './sse.js';
import type { SseEvent } from './types.js';
import type { TraceContext } from './transport.js';

export interface EngineClientOptions {
  /** TCP connect timeout. Default 5 s. */
  connectTimeoutMs?: number;
  /** Time from sending the request to the response headers. Default 300 s (a long prefill answers late). */
  firstByteTimeoutMs?: number;
  /** Longest silence inside a response body. Default 300 s. */
  idleTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open. Default 4 s: under the 5 s after which
   * uvicorn, the server of vLLM's and SGLang's OpenAI APIs, closes an idle connection itself.
   * Held longer, a request written just as the engine closes the connection is lost after it was
   * sent; the router cannot know the engine did not run it, so it answers 502 instead of failing over.
   */
  keepAliveTimeoutMs?: number;
  /** Connections per engine (each stream holds one); null for no limit (the default). */
  connections?: number | null;
  /** Largest non-streamed response body read. Default 64 MiB. */
  maxResponseBytes?: number;
}

export interface EngineCallOptions {
  /** Sent as X-Request-Id (the same id on every leg of a request). */
  requestId: string;
  signal?: SignalLike;
  headers?: Record<string, string>;
  /** Overrides the client's first-byte timeout for this call. */
  firstByteTimeoutMs?: number;
  /** Called once the request was written to a connection to the engine (see Leg.onSent). */
  onSent?: () => void;
  /** Sent as traceparent and tracestate (tracing on only: nothing is added otherwise). */
  trace?: TraceContext;
}

const MAX_ERROR_BODY_BYTES = 64 * 1024;
const DAY_MS = 86_400_000;
/** Below uvicorn's default timeout_keep_alive (5 s), which the engines' OpenAI servers run with. */
const DEFAULT_KEEP_ALIVE_MS = 4_000;

interface ResolvedOptions {
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  keepAliveTimeoutMs: number;
  connections: number | null;
  maxResponseBytes: number;
}

export function resolveClientOptions(opts: EngineClientOptions | undefined): ResolvedOptions {
  const o = expectObject(opts, 'engine client options') as EngineClientOptions;
  const ms = (v: unknown, name: string, dflt: number) => (v === undefined ? dflt : expectInteger(v, name, 1, DAY_MS));
  return {
    connectTimeoutMs: ms(o.connectTimeoutMs, 'connectTimeoutMs', 5_000),
    firstByteTimeoutMs: ms(o.firstByteTimeoutMs, 'firstByteTimeoutMs', 300_000),
    idleTimeoutMs: ms(o.idleTimeoutMs, 'idleTimeoutMs', 300_000),
    keepAliveTimeoutMs: ms(o.keepAliveTimeoutMs, 'keepAliveTimeoutMs', DEFAULT_KEEP_ALIVE_MS),
    connections: o.connections === undefined || o.connections === null ? null : expectInteger(o.connections, 'connections', 1, 1 << 20),
    maxResponseBytes: o.maxResponseBytes === undefined ? 64 << 20 : expectInteger(o.maxResponseBytes, 'maxResponseBytes', 1, 2 ** 31 - 1),
  };
}

export class EngineClient {
  readonly baseUrl: string;
  private readonly pool: Pool;
  private readonly prefix: string;
  private readonly opts: ResolvedOptions;

  constructor(baseUrl: string, opts?: EngineClientOptions) {
    const { origin, prefix } = parseBaseUrl(baseUrl);
    this.baseUrl = baseUrl;
    this.prefix = prefix;
    this.opts = resolveClientOptions(opts);
    this.pool = new Pool(origin, {
      connections: this.opts.connections,
      connectTimeout: this.opts.connectTimeoutMs,
      keepAliveTimeout: this.opts.keepAliveTimeoutMs,
      headersTimeout: this.opts.firstByteTimeoutMs,
      bodyTimeout: this.opts.idleTimeoutMs,
    });
  }

  /** POSTs a JSON body and returns the parsed JSON answer (2xx), else throws EngineError. */
  async postJson(route: string, body: Record<string, unknown>, call: EngineCallOptions): Promise<unknown> {
    const res = await this.send(route, body, call, 'application/json');
    const text = await this.readText(res.body, this.opts.maxResponseBytes, call.signal);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw transportError('engine_bad_response', this.baseUrl, `status ${res.statusCode} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  }

  /** POSTs a control call (an engine's own API, e.g. SGLang's open_session): its JSON answer, or undefined for an empty one. */
  async postControl(route: string, body: Record<string, unknown>, call: EngineCallOptions): Promise<unknown> {
    const res = await this.send(route, body, call, 'application/json');
    const text = await this.readText(res.body, MAX_ERROR_BODY_BYTES, call.signal);
    return text.trim() === '' ? undefined : parseMaybeJson(text);
  }

  /**
   * POSTs a JSON body asking for SSE; resolves once the engine answered 2xx with the stream.
   * Nothing is read from the socket until the returned stream is pulled.
   */
  async postStream(route: string, body: Record<string, unknown>, call: EngineCallOptions): Promise<EngineStream> {
    const res = await this.send(route, body, call, 'text/event-stream');
    const type = res.header('content-type') ?? '';
    if (type.startsWith('application/json')) {
      // A 2xx JSON answer to a stream request is not a stream: report what the engine said.
      const text = await this.readText(res.body, MAX_ERROR_BODY_BYTES, call.signal);
      throw new EngineError(502, parseMaybeJson(text), `engine answered a stream request with JSON (${this.baseUrl})`, 'engine_bad_response', this.baseUrl);
    }
    return new EngineStream(res.body, this.baseUrl, call.signal);
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }

  private async send(route: string, body: Record<string, unknown>, call: EngineCallOptions, accept: string): Promise<ResponseHead> {
    const signal = call.signal;
    if (signal?.aborted) throw abortError(signal);
    const opts: Dispatcher.DispatchOptions = {
      path: this.prefix + route,
      method: 'POST',
      headers: requestHeaders(accept, call),
      body: engineBody(body),
      headersTimeout: call.firstByteTimeoutMs ?? this.opts.firstByteTimeoutMs,
      bodyTimeout: this.opts.idleTimeoutMs,
    };
    let res: ResponseHead;
    try {
      res = await dispatchRequest(this.pool, opts, signal, call.onSent);
    } catch (err) {
      if (!isResetBeforeAnswer(err) || signal?.aborted) throw this.translate(err, signal, false);
      // Once more: an engine that closes an idle kept-alive connection as a request arrives resets
      // it with the request unread (bench/faults/keepalive-race.ts); it never ran it, and a new
      // connection reaches it. onSent was called for the first write, not again.
      try {
        res = await dispatchRequest(this.pool, opts, signal);
      } catch (again) {
        throw this.translate(again, signal, false);
      }
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const text = await this.readText(res.body, MAX_ERROR_BODY_BYTES, signal).catch(() => '');
      const parsed = parseMaybeJson(text);
      throw new EngineError(
        res.statusCode,
        parsed,
        `engine ${this.baseUrl} answered ${res.statusCode}: ${errorMessageOf(parsed) ?? text.slice(0, 200)}`,
        'engine_rejected',
        this.baseUrl,
      );
    }
    return res;
  }

  private async readText(body: ResponseBody, limit: number, signal: SignalLike | undefined): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for (let chunk = await body.read(); chunk !== null; chunk = await body.read()) {
        size += chunk.byteLength;
        if (size > limit) {
          body.destroy();
          throw transportError('engine_bad_response', this.baseUrl, `response larger than ${limit} bytes`);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      throw this.translate(err, signal, true);
    }
    return chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
  }

  private translate(err: unknown, signal: SignalLike | undefined, inBody: boolean): unknown {
    return translateUndiciError(err, signal, this.baseUrl, inBody);
  }
}

/**
 * Maps an undici/socket failure to an EngineError (or an AbortError when the caller aborted),
 * saying whether the engine may have accepted the request (see EngineError.mayHaveAccepted).
 */
export function translateUndiciError(err: unknown, signal: SignalLike | undefined, engine: string, inBody: boolean): unknown {
  if (err instanceof EngineError) return err;
  if (signal?.aborted) return abortError(signal);
  const sent = !(err instanceof RequestNotSentError);
  const cause = sent ? err : (err as RequestNotSentError).cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const detail = cause instanceof Error ? cause.message : String(cause);
  switch (code) {
    // Failures of the connection itself: the request was never written.
    case 'UND_ERR_CONNECT_TIMEOUT':
      return transportError('engine_connect_timeout', engine, detail, false);
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EAI_AGAIN':
      return transportError('engine_unreachable', engine, detail, false);
    case 'UND_ERR_HEADERS_TIMEOUT':
      return transportError('engine_first_byte_timeout', engine, detail);
    case 'UND_ERR_BODY_TIMEOUT':
      return transportError('engine_idle_timeout', engine, detail);
    default:
      if (cause instanceof Error && (cause.name === 'AbortError' || code === 'UND_ERR_ABORTED')) return abortError(signal);
      return transportError(inBody ? 'engine_stream_broken' : 'engine_unreachable', engine, detail, sent);
  }
}

/**
 * A written request whose connection the engine reset before any answer: a TCP reset (ECONNRESET;
 * EPIPE when the write itself met it) comes from a peer that closed its socket with data unread or
 * arriving after the close, so the engine's process never read the whole request and cannot have
 * run it. (An orderly close, UND_ERR_SOCKET "other side closed", may follow a request the engine
 * read: that one stays possibly accepted.) The exceptions, a peer that resets after reading (an
 * abortive close, SO_LINGER 0) or a middlebox's reset, are not how uvicorn closes an idle connection.
 */
export function isResetBeforeAnswer(err: unknown): boolean {
  if (err instanceof RequestNotSentError) return false;
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/**
 * The events of one engine response, pulled: each nextBatch() reads one chunk from the socket and
 * returns the events it completed (next() hands them out one at a time). Iterate once. cancel()
 * (or breaking out of for-await) closes the connection, which is how an engine learns that the
 * request is abandoned.
 */
export class EngineStream implements AsyncIterable<SseEvent>, AsyncIterator<SseEvent>, EventBatchSource {
  private readonly parser = new SseParser();
  private readonly cursor = new EventCursor(() => this.readBatch());
  private done = false;
  private cancelled = false;
  private iterating = false;

  constructor(
    private readonly body: ResponseBody,
    readonly engine: string,
    private readonly signal?: SignalLike,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<SseEvent> {
    if (this.iterating) throw new TypeError('an engine stream can be iterated only once');
    this.iterating = true;
    return this;
  }

  get finished(): boolean {
    return this.done;
  }

  next(): Promise<IteratorResult<SseEvent>> {
    return this.cursor.next();
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    return this.cursor.nextBatch();
  }

  private async readBatch(): Promise<readonly SseEvent[] | null> {
    for (;;) {
      if (this.done) return null;
      let chunk: Buffer | null;
      try {
        chunk = await this.body.read();
      } catch (err) {
        this.done = true;
        throw translateUndiciError(err, this.signal, this.engine, true);
      }
      let events: SseEvent[];
      try {
        if (chunk === null) {
          this.done = true;
          events = this.parser.end();
        } else {
          events = this.parser.push(chunk);
        }
      } catch (err) {
        this.cancel();
        throw transportError('engine_bad_response', this.engine, (err as Error).message);
      }
      if (this.cancelled) return null; // cancel() while the read was pending drops what it brought
      if (events.length > 0) return events;
    }
  }

  async return(): Promise<IteratorResult<SseEvent>> {
    this.cancel();
    return { value: undefined, done: true };
  }

  /** Stops reading and closes the connection (idempotent). */
  cancel(): void {
    this.done = true;
    this.cancelled = true;
    this.cursor.clear();
    this.body.destroy();
  }
}

/**
 * The request's headers as undici's flat [name, value, ...] array, the form its Request reads
 * without Object.keys() and an iterator check; a call's own header replaces a default of the
 * same name (as `{ ...defaults, ...call.headers }` did), any other is added.
 */
export function requestHeaders(accept: string, call: EngineCallOptions): string[] {
  const headers = ['content-type', 'application/json', 'accept', accept, 'x-request-id', call.requestId];
  const trace = call.trace;
  if (trace !== undefined) {
    headers.push('traceparent', trace.traceparent);
    if (trace.tracestate !== undefined) headers.push('tracestate', trace.tracestate);
  }
  const extra = call.headers;
  if (extra === undefined) return headers;
  for (const name in extra) {
    if (!Object.hasOwn(extra, name)) continue;
    const at = name === 'content-type' ? 0 : name === 'accept' ? 2 : name === 'x-request-id' ? 4 : -1;
    if (at >= 0) headers[at + 1] = extra[name];
    else headers.push(name, extra[name]);
  }
  return headers;
}

function parseMaybeJson(text: string): unknown {
  if (text.length === 0) return '';
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorMessageOf(body: unknown): string | undefined {
  const e = (body as { error?: unknown } | null)?.error;
  if (typeof e === 'string') return e;
  const m = (e as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : undefined;
}

/** One EngineClient per base URL, created on first use and closed together. */
export class EngineClients {
  private readonly clients = new Map<string, EngineClient>();

  constructor(private readonly opts?: EngineClientOptions) {
    resolveClientOptions(opts); // fail early on bad options
  }

  get(baseUrl: string): EngineClient {
    let c = this.clients.get(baseUrl);
    if (!c) {
      c = new EngineClient(baseUrl, this.opts);
      this.clients.set(baseUrl, c);
    }
    return c;
  }

  /** Closes and forgets one engine's connections (its worker left). */
  async drop(baseUrl: string): Promise<void> {
    const c = this.clients.get(baseUrl);
    this.clients.delete(baseUrl);
    await c?.close();
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((c) => c.close()));
  }
}
