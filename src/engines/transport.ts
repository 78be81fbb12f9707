// The leg transport: how one booked leg of a request reaches its engine and how the engine's
// answer comes back. Routing sends legs only through this interface. The HTTP transport
// (http-transport.ts) speaks to real engines over undici; the trace replay's virtual transport
// (src/sim/replay) hands legs to simulated engines in virtual time.
//
// Failures are typed: an EngineError (its `failure` says what broke, `mayHaveAccepted` whether the
// engine may have started on the request: false only when it certainly never got it, so the leg
// could go to another worker without running twice), or an AbortError once the leg's signal fired.
import type { SignalLike } from '../util/cancellation.js';
import type { EventBatchSource } from './event-batch.js';
import type { OpenAiRoute, SseEvent, WorkerInfo } from './types.js';

/** W3C trace context of a leg's span (its traceparent and tracestate headers): only when tracing is on. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** One leg, routed and booked: where it goes and what it carries. */
export interface Leg {
  worker: WorkerInfo;
  /** The data-parallel rank the router chose on that worker. */
  dpRank: number;
  route: OpenAiRoute;
  /** The engine request body (the client's, with what the handoff adds). */
  body: Record<string, unknown>;
  /** The request's id, the same on every leg (X-Request-Id over HTTP). */
  requestId: string;
  /** Cancels the leg: a pending answer rejects with an AbortError and the engine drops the request. */
  signal?: SignalLike;
  /**
   * Called once the request was handed to the engine (written to its connection): from then on
   * the engine may have accepted it. Not called for a leg that failed before (mayHaveAccepted false).
   */
  onSent?: () => void;
  /** The leg's span, sent to the engine so that its own spans join the request's trace. */
  trace?: TraceContext;
}

/**
 * A streamed answer, pulled: nothing is read from the engine until the consumer asks for the next
 * batch, so a slow consumer pauses the engine. Batches are never empty; null is the end.
 */
export interface LegStream extends EventBatchSource {
  nextBatch(): Promise<readonly SseEvent[] | null>;
  /** Stops reading and closes the leg (idempotent): the engine learns the request is abandoned. */
  cancel(): void;
}

/** An engine session call (Dynamo's session_control): open a session on a worker, or close it. */
export interface SessionCall {
  worker: WorkerInfo;
  action: 'open' | 'close';
  sessionId: string;
  /** Idle seconds before the engine may drop the session (open only). */
  timeoutS?: number;
  /** The request that asked for it (X-Request-Id). */
  requestId: string;
}

export interface LegTransport {
  /** Sends a non-streamed leg; resolves with the engine's JSON answer (2xx). */
  json(leg: Leg): Promise<unknown>;
  /** Sends a streamed leg; resolves once the engine answered 2xx with its stream. */
  stream(leg: Leg): Promise<LegStream>;
  /**
   * Opens or closes an engine session (SGLang's open_session / close_session; engines without a
   * session API have nothing to call). A transport without it keeps sessions in the router only.
   */
  session?(call: SessionCall): Promise<void>;
}
