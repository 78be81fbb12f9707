// One engine response read through undici's dispatch handler API and pulled chunk by chunk.
// undici's request() wraps every response in a Readable, an async iterator and abort-listener
// bookkeeping; on a short streamed answer those were the largest part of the client's cost. Here a
// handler queues the chunks and the reader pulls them; more than HIGH_WATER_BYTES unread pauses
// the connection (the engine stops being read), and reading them resumes it.
import type { Dispatcher } from 'undici';
import type { SignalLike } from '../util/cancellation.js';

const HIGH_WATER_BYTES = 64 * 1024;

export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** A response's status and headers (as undici's raw name/value pairs, parsed on demand) and its body. */
export class ResponseHead {
  private parsed: ResponseHeaders | undefined;

  constructor(
    readonly statusCode: number,
    private readonly rawHeaders: ReadonlyArray<Buffer | string>,
    readonly body: ResponseBody,
  ) {}

  /** Every header, names in lower case (a repeated header's values in an array). */
  get headers(): ResponseHeaders {
    if (this.parsed === undefined) {
      const out = Object.create(null) as ResponseHeaders; // a header named __proto__ stays a header
      for (let i = 0; i + 1 < this.rawHeaders.length; i += 2) {
        const name = latin1(this.rawHeaders[i]).toLowerCase();
        const value = latin1(this.rawHeaders[i + 1]);
        const seen = out[name];
        out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
      }
      this.parsed = out;
    }
    return this.parsed;
  }

  /** One header's value (the first when it repeats), without parsing the others. */
  header(name: string): string | undefined {
    if (this.parsed !== undefined) {
      const v = this.parsed[name];
      return Array.isArray(v) ? v[0] : v;
    }
    for (let i = 0; i + 1 < this.rawHeaders.length; i += 2) {
      const raw = this.rawHeaders[i];
      if (raw.length === name.length && latin1(raw).toLowerCase() === name) return latin1(this.rawHeaders[i + 1]);
    }
    return undefined;
  }
}

function latin1(b: Buffer | string): string {
  return typeof b === 'string' ? b : b.toString('latin1');
}

/** The body of a response whose head arrived: read() until null; destroy() closes the connection. */
export class ResponseBody {
  private readonly chunks: Buffer[] = [];
  private head = 0;
  private queuedBytes = 0;
  private ended = false;
  private failure: Error | undefined;
  private destroyed = false;
  private waiter: { resolve(c: Buffer | null): void; reject(err: unknown): void } | undefined;

  constructor(private readonly controller: BodyConnection) {}

  /** The next chunk, null at the end; rejects with the transport's error. */
  read(): Promise<Buffer | null> {
    if (this.head < this.chunks.length) return Promise.resolve(this.shift());
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended || this.destroyed) return Promise.resolve(null);
    if (this.waiter) return Promise.reject(new TypeError('a response body is read by one reader at a time'));
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** Stops reading and closes the connection unless the response already ended (idempotent). */
  destroy(reason: Error = new Error('response body destroyed')): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.chunks.length = 0;
    this.head = 0;
    if (!this.ended && !this.failure) this.controller.abort(reason);
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(reason);
  }

  /** @internal the handler's side */
  push(chunk: Buffer): void {
    if (this.destroyed) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve(chunk);
      return;
    }
    this.chunks.push(chunk);
    this.queuedBytes += chunk.byteLength;
    if (this.queuedBytes > HIGH_WATER_BYTES) this.controller.pause();
  }

  /** @internal */
  end(): void {
    this.ended = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve(null);
  }

  /** @internal */
  fail(err: Error): void {
    if (this.destroyed || this.ended) return;
    this.failure = err;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  private shift(): Buffer {
    const c = this.chunks[this.head];
    this.chunks[this.head++] = undefined as unknown as Buffer;
    if (this.head === this.chunks.length) {
      this.chunks.length = 0;
      this.head = 0;
    }
    this.queuedBytes -= c.byteLength;
    if (this.controller.paused && this.queuedBytes <= HIGH_WATER_BYTES / 2) this.controller.resume();
    return c;
  }
}

/**
 * The transport failed before the request was handed to a connected socket (connect refused or
 * timed out, DNS, the connection lost first): the engine never saw it. `cause` is undici's error.
 */
export class RequestNotSentError extends Error {
  override name = 'RequestNotSentError';
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** The body's side of the connection: pause, resume or abort the response being read. */
export interface BodyConnection {
  readonly paused: boolean;
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

/**
 * Dispatches `opts` on `dispatcher`; resolves with the response head once it arrived (the body is
 * read on demand), rejects with the transport's error (a RequestNotSentError around it when the
 * request was never written) or, when `signal` fires first, its reason. `onSent` is called once
 * the request is written to a connected socket.
 */
export function dispatchRequest(dispatcher: Dispatcher, opts: Dispatcher.DispatchOptions, signal?: SignalLike, onSent?: () => void): Promise<ResponseHead> {
  return new Promise<ResponseHead>((resolve, reject) => {
    const request = new EngineRequest(resolve, reject, signal, onSent);
    if (signal) signal.addEventListener('abort', request.onAbort, { once: true });
    try {
      dispatcher.dispatch(opts, request as unknown as Dispatcher.DispatchHandler);
    } catch (err) {
      request.notDispatched(err);
    }
  });
}

/**
 * One request's handler and its body's connection in one object. It speaks undici's handler API
 * of onConnect / onHeaders / onData / onComplete / onError, which undici's clients call
 * directly: a handler of the newer onRequestStart / onResponseStart API is wrapped per request in
 * an adapter that also builds a controller and parses the response headers and trailers into
 * objects, of which the router reads one header, on a stream request only (2026-11-28: ~2-3 us of
 * router CPU per request). The head's headers are parsed when asked (ResponseHead.headers).
 */
class EngineRequest implements BodyConnection {
  private settled = false;
  paused = false;
  // Set once undici hands the request to a connected socket: for a body in memory (ours always
  // are) it writes headers and body in the same synchronous call.
  private abortConnection: ((reason: Error) => void) | undefined;
  private aborted = false;
  private resumeConnection: (() => void) | undefined;
  private body: ResponseBody | undefined;

  constructor(
    private readonly resolve: (head: ResponseHead) => void,
    private readonly reject: (err: unknown) => void,
    private readonly signal: SignalLike | undefined,
    private readonly onSent: (() => void) | undefined,
  ) {}

  readonly onAbort = (): void => {
    const reason = this.signal!.reason instanceof Error ? this.signal!.reason : new Error('request aborted');
    if (this.abortConnection) this.abort(reason);
    else if (!this.settled) {
      this.settled = true;
      this.reject(reason);
    }
  };

  /** undici refused the request before it took it: nothing was sent. */
  notDispatched(err: unknown): void {
    this.stopListening();
    this.settled = true;
    this.reject(new RequestNotSentError(err));
  }

  private stopListening(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  // ---- BodyConnection ----

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.resumeConnection?.();
  }

  abort(reason: Error): void {
    if (this.aborted || !this.abortConnection) return;
    this.aborted = true;
    this.abortConnection(reason);
  }

  // ---- undici's handler ----

  onConnect(abort: (reason: Error) => void): void {
    this.abortConnection = abort;
    if (this.signal?.aborted) this.abort(this.signal.reason instanceof Error ? this.signal.reason : new Error('request aborted'));
    else this.onSent?.();
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    this.resumeConnection = resume;
    if (statusCode < 200) return true; // 1xx: informational, the real head follows
    this.body = new ResponseBody(this);
    this.settled = true;
    this.resolve(new ResponseHead(statusCode, rawHeaders, this.body));
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.body?.push(chunk);
    return !this.paused;
  }

  onComplete(): void {
    this.stopListening();
    this.body?.end();
  }

  onError(err: Error): void {
    this.stopListening();
    if (this.body) this.body.fail(err);
    else if (!this.settled) {
      this.settled = true;
      this.reject(this.abortConnection ? err : new RequestNotSentError(err));
    }
  }
}
