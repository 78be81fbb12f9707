// The log lines of 5xx answers: the request id, the status and code, and what the client is never
// told (the engine's URL, credentials removed, and the transport's own words). When a fleet is
// down every request fails the same way: one line a second per (status, code), with how many
// were left out since the last.
import { EngineError } from '../../engines/errors.js';
import { redactUrl, type Logger } from '../../util/logger.js';
import { LogThrottle } from '../../util/log-throttle.js';
import type { WorkerOf } from '../call/errors.js';

const WINDOW_MS = 1000;

export class FailureLog {
  private readonly throttle: LogThrottle;

  constructor(
    private readonly log: Logger,
    private readonly workerOf: WorkerOf,
    clock: () => number = Date.now,
  ) {
    this.throttle = new LogThrottle(WINDOW_MS, clock);
  }

  /** A 5xx answer (its status and OpenAI-style body, as the client got it) and the error behind it. */
  record(requestId: string | undefined, route: string, reply: { status: number; body: string }, err: unknown, traceId?: string): void {
    const { status } = reply;
    const { code, message } = (JSON.parse(reply.body) as { error: { code: string; message: string } }).error;
    const suppressed = this.throttle.admit(`${status} ${code}`);
    if (suppressed === undefined) return;
    const fields: Record<string, unknown> = { route, status, code };
    if (suppressed > 0) fields.suppressed = suppressed;
    if (err instanceof EngineError) {
      fields.error = err.message;
      if (err.engine !== undefined) {
        fields.engine = redactUrl(err.engine);
        const worker = this.workerOf(err.engine);
        if (worker !== undefined) fields.worker = worker;
      }
      fields.failure = err.failure;
      if (err.detail !== undefined) fields.detail = err.detail;
    } else if (err instanceof Error && status === 500) {
      fields.err = { type: err.name, message: err.message, stack: err.stack };
    }
    // The request's id and its trace's go together: a line found by one leads to the other.
    const ids = traceId === undefined ? { request_id: requestId } : { request_id: requestId, trace_id: traceId };
    const log = requestId === undefined && traceId === undefined ? this.log : this.log.child(ids);
    if (status === 500) log.error(fields, message);
    else log.warn(fields, message);
  }
}
