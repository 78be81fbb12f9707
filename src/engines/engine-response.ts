// One engine response read through undici's dispatch handler API and pulled chunk by chunk.
// undici's request() wraps every response in a Readable, an async iterator and abort-listener
// bookkeeping; on a short streamed answer those were the largest part of the client's cost. Here a
// handler queues the chunks and the reader pulls them; more than HIGH_WATER_BYTES unread pauses
// the connection (the engine stops being read), and reading them resumes it.
import type { Dispatcher } from 'undici';
import type { SignalLike } from '../util/cancellation.js';

const HIGH_WATER_BYTES = 64 * 1024;

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface ResponseHead {
  statusCode: number;
  headers: ResponseHeaders;
  body: ResponseBody;
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

  constructor(private readonly controller: Dispatcher.DispatchController) {}

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

/**
 * Dispatches `opts` on `dispatcher`; resolves with the response head once it arrived (the body is
 * read on demand), rejects with the transport's error (a RequestNotSentError around it when the
 * request was never written) or, when `signal` fires first, its reason. `onSent` is called once
 * the request is written to a connected socket.
 */
export function dispatchRequest(dispatcher: Dispatcher, opts: Dispatcher.DispatchOptions, signal?: SignalLike, onSent?: () => void): Promise<ResponseHead> {
  return new Promise<ResponseHead>((resolve, reject) => {
    // Set once undici hands the request to a connected socket: for a body in memory (ours
    // always are) it writes headers and body in the same synchronous call.
    let controller: Dispatcher.DispatchController | undefined;
    let body: ResponseBody | undefined;
    let settled = false;
    const onAbort = () => {
      const reason = signal!.reason instanceof Error ? signal!.reason : new Error('request aborted');
      if (controller) controller.abort(reason);
      else if (!settled) {
        settled = true;
        reject(reason);
      }
    };
    const stopListening = () => signal?.removeEventListener('abort', onAbort);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (signal?.aborted) c.abort(signal.reason instanceof Error ? signal.reason : new Error('request aborted'));
        else onSent?.();
      },
      onResponseStart(c, statusCode, headers) {
        if (statusCode < 200) return; // 1xx: informational, the real head follows
        body = new ResponseBody(c);
        settled = true;
        resolve({ statusCode, headers: headers as ResponseHeaders, body });
      },
      onResponseData(_c, chunk) {
        body?.push(chunk);
      },
      onResponseEnd() {
        stopListening();
        body?.end();
      },
      onResponseError(_c, err) {
        stopListening();
        if (body) body.fail(err);
        else if (!settled) {
          settled = true;
          reject(controller ? err : new RequestNotSentError(err));
        }
      },
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      dispatcher.dispatch(opts, handler);
    } catch (err) {
      stopListening();
      settled = true;
      reject(new RequestNotSentError(err));
    }
  });
}
