// Engine failures as one error type the frontend maps to HTTP: the engine's own error answer
// (its status and body), or a transport failure expressed as a gateway status (502 unreachable or
// broken, 504 timed out) with an OpenAI-style body saying what happened.
import type { SignalLike } from '../util/cancellation.js';

export type EngineFailure =
  | 'engine_rejected' // the engine answered with a non-2xx status
  | 'engine_unreachable' // connection refused, reset, DNS
  | 'engine_connect_timeout'
  | 'engine_first_byte_timeout'
  | 'engine_idle_timeout' // no data for too long in the middle of a response
  | 'engine_stream_broken' // the connection died mid-response
  | 'engine_bad_response'; // a 2xx whose body is not what the protocol promises

export class EngineError extends Error {
  override name = 'EngineError';
  constructor(
    /** The engine's HTTP status, or 502/504 for transport failures. */
    readonly status: number,
    /** The engine's body (parsed JSON when it was JSON, else text), or an OpenAI-style error object. */
    readonly body: unknown,
    message: string,
    readonly failure: EngineFailure = 'engine_rejected',
    /** Base URL of the engine that failed. */
    readonly engine?: string,
    /**
     * False only when the request certainly never reached the engine (connection refused, DNS,
     * connect timeout, a connection lost before the request was written): the engine did no work
     * for it, so sending it to another worker cannot run it twice. True for everything after the
     * request was written, an engine's own answer included.
     */
    readonly mayHaveAccepted: boolean = true,
    /** What went wrong in the transport's words (errno text, addresses): for logs, never for clients. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** An EngineError for a transport failure, with a body shaped like an OpenAI error. */
export function transportError(failure: Exclude<EngineFailure, 'engine_rejected'>, engine: string, detail: string, mayHaveAccepted = true): EngineError {
  const status = failure === 'engine_connect_timeout' || failure === 'engine_first_byte_timeout' || failure === 'engine_idle_timeout' ? 504 : 502;
  const message = `${describeFailure(failure)} (${engine}): ${detail}`;
  return new EngineError(status, { error: { message, type: 'engine_error', code: failure } }, message, failure, engine, mayHaveAccepted, detail);
}

/** The failure in a few words, without the engine's address or the system's error text. */
export function describeFailure(failure: EngineFailure): string {
  switch (failure) {
    case 'engine_unreachable':
      return 'engine unreachable';
    case 'engine_connect_timeout':
      return 'engine connect timeout';
    case 'engine_first_byte_timeout':
      return 'engine sent nothing before the first-byte timeout';
    case 'engine_idle_timeout':
      return 'engine stream idle for too long';
    case 'engine_stream_broken':
      return 'engine connection broke mid-response';
    case 'engine_bad_response':
      return 'engine sent an unexpected response';
    default:
      return 'engine rejected the request';
  }
}

/** The error a cancelled operation rejects with (what fetch and undici use: name 'AbortError'). */
export function abortError(signal?: SignalLike, what = 'the request was aborted'): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new DOMException(what, 'AbortError');
  return err as unknown as Error;
}

export function isAbortError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && ((err as { name?: unknown }).name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR');
}
