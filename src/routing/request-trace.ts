// What routing tells a request's trace: its mode, each routing decision, its wait in a router
// queue, each leg to an engine. The server implements it with OpenTelemetry
// (src/server/observability/otel-tracing.ts); routing never imports the SDK. A request carries one
// only when tracing is on, so every call site is `trace?.…`: with tracing off nothing is built.
import type { RoutingDecision } from '../core/routing-core.js';
import type { TraceContext } from '../engines/transport.js';
import type { WorkerInfo } from '../engines/types.js';

export interface RequestTrace {
  /** The trace's id (32 hex digits), for log lines. */
  readonly traceId: string;
  /** The serving mode chosen and why (x-kvroute-mode, x-kvroute-mode-reason). */
  mode(mode: string, reason: string): void;
  /** A routing decision booked on `pool`, made from `startedAt` (performance.now()) until now. */
  decision(pool: string, d: RoutingDecision, startedAt: number): void;
  /** The request waits in `pool`'s router queue from now; `end` once it got its turn or left. */
  queued(pool: string): { end(err?: unknown): void };
  /** A leg to `worker` begins. */
  leg(pool: string, worker: WorkerInfo, dpRank: number, stream: boolean): LegTrace;
}

/** One leg's span: what its engine is sent, and what happened to it. */
export interface LegTrace {
  /** The leg span's W3C trace context, sent to the engine. */
  readonly context: TraceContext;
  /** The request was written to the engine's connection. */
  sent(): void;
  /** The engine answered (its status line and headers). */
  firstByte(): void;
  firstToken(): void;
  /** The engine never got it (`reason`): the leg goes to `worker` now. */
  retried(reason: string, worker: WorkerInfo, dpRank: number): void;
  /** The leg is over (the booking's free reason), with the error that ended it. */
  end(reason: string, err?: unknown): void;
}
