// KvRouter: one per worker pool. It routes and books a request on the pool's RoutingCore
// (booking.ts), sends the leg to the chosen engine through the pool's LegTransport (HTTP, or the
// replay's virtual engines), marks the booking's prefill completed at the first token and frees
// the booking exactly once when the leg ends, fails, is aborted or is abandoned. Streamed legs are
// handed out as pull-based GuardedStreams, so a slow consumer pauses the engine read.
//
// Failover before the first byte: a leg whose engine certainly never got it (connection refused,
// DNS, connect timeout: EngineError.mayHaveAccepted false) is routed again with the workers it
// failed on left out, its booking moved (the old decision freed first), at most maxRetries times.
// Once an engine may have accepted a leg, nothing is retried: it may be working on it. Every
// attempt's outcome goes to the pool, whose outlier detection ejects a worker that keeps failing.
import { Cancellation, type SignalLike } from '../util/cancellation.js';
import type { PolicyName, RouteRequest, RoutingDecision } from '../core/routing-core.js';
import { describe, expectInteger } from '../util/validate.js';
import { abortError, EngineError, type EngineFailure, isAbortError } from '../engines/errors.js';
import { carriesToken } from '../engines/sse.js';
import { withEnginePriority } from '../engines/priority.js';
import type { Leg, LegStream, LegTransport, SessionCall } from '../engines/transport.js';
import type { LegTrace, RequestTrace } from './request-trace.js';
import type { OpenAiRoute, SseEvent, WorkerInfo } from '../engines/types.js';
import { Booking, type KvRouterCore } from './booking.js';
import type { LegOutcome } from './outlier-detection.js';
import { BookingGuard, type FreeReason, GuardedStream } from './booking-guard.js';
import { FirstEventSource, releaseThenClose } from './first-event.js';
import { UnknownWorkerHintError } from './errors.js';
import type { WorkerPool } from './worker-pool.js';
import { copyFields, withFields } from '../util/objects.js';

export interface KvRouterOptions {
  core: KvRouterCore;
  pool: WorkerPool;
  /** How legs reach the engines (HttpTransport over EngineClients for real engines). */
  transport: LegTransport;
  /** A consumer that stops pulling a stream for this long abandons it (booking freed, leg closed). Default 120 s. */
  abandonAfterMs?: number;
  /** Longest a leg the client left is kept running to finish its KV handoff. Default 60 s. */
  releaseTimeoutMs?: number;
  /** How often a leg whose engine never got it is sent to another worker. Default 2; 0 turns failover off. */
  maxRetries?: number;
  /** Called for every retry (metrics, logs). */
  onRetry?(retry: LegRetry): void;
  /**
   * Output block tracking: each streamed event carrying a token grows the booking by one output
   * token (new decode blocks as the sequence fills them; with an expected output length the
   * request's blocks weigh less as it nears it). Off by default: decode load is the prompt's blocks.
   */
  trackOutputBlocks?: boolean;
}

/** A leg that failed before its engine accepted it, sent to another worker. */
export interface LegRetry {
  pool: string;
  requestId: string;
  /** The request's trace id, when tracing is on (log lines carry it beside the request id). */
  traceId?: string;
  /** The worker the leg failed on. */
  worker: number;
  /** The worker it goes to now. */
  to: number;
  reason: EngineFailure;
  /** 1 for the leg's first retry. */
  attempt: number;
  error: EngineError;
}

/** How a booked leg may fail over (book's third argument). */
export interface BookOptions {
  /**
   * The route of a retry. Default: the booked route, pins included (a leg pinned to its worker
   * does not move). Give one without a pin that was only a preference (a session's, a peek's);
   * false: the leg never moves.
   */
  failover?: LegRoute | false;
  /** Workers a retry may choose (say, engines of the same kind); default any selectable one. */
  accept?(w: WorkerInfo): boolean;
  /** The request's trace (tracing on): the decision becomes a span. */
  trace?: RequestTrace;
}

/** A leg's body, or how to make it for the worker its booking is on (a retry may move it). */
export type LegBody = Record<string, unknown> | ((b: Booking) => Record<string, unknown>);

/** Where and how to route one leg; pins and overrides come from hints and the handoff. */
export type LegRoute = Omit<RouteRequest, 'allowedWorkers'>;

export interface LegOptions {
  requestId: string;
  /** The client's signal. */
  signal: SignalLike;
  /**
   * The leg completes a KV handoff (a decode leg after a vLLM/TensorRT-LLM prefill): if the client
   * leaves before the leg's first event, the leg runs on in the background until that event (or
   * releaseTimeoutMs) so the prefill worker's blocks are pulled, not stranded.
   */
  holdUntilFirstEvent?: boolean;
  /**
   * The request's priority class, forwarded to the engine in the body's `priority` field as the
   * booked worker's kind reads it (engines/priority.ts; none for TensorRT-LLM). Undefined: the body
   * goes as it is.
   */
  enginePriority?: number;
  /** Sees each streamed event before the consumer. */
  onEvent?(ev: SseEvent): void;
  /** Called once when the leg finishes, with why. */
  onFinish?(reason: FreeReason, err?: unknown): void;
  /**
   * Called once the leg's request was handed to its engine (from then on it may have been
   * accepted), with the booking it went out on.
   */
  onSent?(b: Booking): void;
  /** The request's trace (tracing on): the leg becomes a span, its context sent to the engine. */
  trace?: RequestTrace;
}

export interface KvRouterStats {
  booked: number;
  /** Legs sent to another worker after their engine never got them. */
  retries: number;
  /** Legs finished, by why. */
  finished: Record<FreeReason, number>;
  /** Legs kept running after their client left, to finish a KV handoff (now / ever). */
  releasing: number;
  released: number;
}

export class KvRouter {
  readonly core: KvRouterCore;
  readonly pool: WorkerPool;
  private readonly transport: LegTransport;
  private readonly abandonAfterMs: number;
  private readonly releaseTimeoutMs: number;
  private readonly maxRetries: number;
  private readonly onRetry: ((r: LegRetry) => void) | undefined;
  private readonly trackOutputBlocks: boolean;
  private readonly releases = new Set<Promise<void>>();
  private readonly loadDropListeners = new Set<() => void>();
  private readonly loadDropped = (): void => {
    for (const fn of this.loadDropListeners) fn();
  };
  private readonly counts: KvRouterStats = {
    booked: 0,
    retries: 0,
    finished: { end: 0, error: 0, abort: 0, disconnect: 0, abandoned: 0, collected: 0, cancelled: 0 },
    releasing: 0,
    released: 0,
  };

  constructor(o: KvRouterOptions) {
    this.core = o.core;
    this.pool = o.pool;
    const t = o.transport as Partial<LegTransport> | undefined;
    if (typeof t?.json !== 'function' || typeof t.stream !== 'function')
      throw new TypeError(`options.transport must be a LegTransport (json and stream), got ${describe(o.transport)}`);
    this.transport = o.transport;
    this.abandonAfterMs = o.abandonAfterMs === undefined ? 120_000 : expectInteger(o.abandonAfterMs, 'abandonAfterMs', 1, 86_400_000);
    this.releaseTimeoutMs = o.releaseTimeoutMs === undefined ? 60_000 : expectInteger(o.releaseTimeoutMs, 'releaseTimeoutMs', 1, 86_400_000);
    this.maxRetries = o.maxRetries === undefined ? 2 : expectInteger(o.maxRetries, 'maxRetries', 0, 100);
    if (o.onRetry !== undefined && typeof o.onRetry !== 'function') throw new TypeError(`options.onRetry must be a function, got ${describe(o.onRetry)}`);
    this.onRetry = o.onRetry;
    if (o.trackOutputBlocks !== undefined && typeof o.trackOutputBlocks !== 'boolean')
      throw new TypeError(`options.trackOutputBlocks must be a boolean, got ${describe(o.trackOutputBlocks)}`);
    if (o.trackOutputBlocks && typeof o.core.addOutputTokens !== 'function')
      throw new TypeError('options.trackOutputBlocks needs a core with addOutputTokens()');
    this.trackOutputBlocks = o.trackOutputBlocks === true;
  }

  get policy(): PolicyName {
    return this.core.config.policy ?? 'kv';
  }

  /** What route() would choose now: books nothing, advances no rotation. */
  query(tokens: Uint32Array, leg: Omit<LegRoute, 'requestId'> & { requestId?: string }): RoutingDecision {
    this.checkPinned(leg.pinnedWorker);
    return this.core.query(tokens, withFields(leg, { allowedWorkers: this.pool.allowedWorkers() }));
  }

  /**
   * Routes and books (one native call); throws the core's RoutingError when nothing fits. `o` says
   * how the leg may fail over to another worker when its engine never gets it.
   */
  book(tokens: Uint32Array, leg: LegRoute, o: BookOptions = {}): Booking {
    this.checkPinned(leg.pinnedWorker);
    const startedAt = o.trace ? performance.now() : 0;
    const decision = this.core.route(tokens, withFields(leg, { allowedWorkers: this.pool.allowedWorkers() }));
    const worker = this.workerOf(decision);
    o.trace?.decision(this.pool.name, decision, startedAt);
    const failover =
      o.failover === false || this.maxRetries === 0 ? undefined : { tokens, route: o.failover ?? leg, accept: o.accept, failed: new Set<number>() };
    return new Booking(decision, worker, this.guardOf(decision), this.core, failover, this.loadDropped);
  }

  /** Sends a booked, non-streamed leg; the booking is freed when it settles. */
  async json(b: Booking, route: OpenAiRoute, body: LegBody, o: LegOptions): Promise<unknown> {
    if (!o.holdUntilFirstEvent) {
      if (o.signal.aborted) return this.refuse(b, o.signal);
      const span = o.trace?.leg(this.pool.name, b.worker, b.decision.dpRank, false);
      try {
        const answer = await this.send(b, route, body, o, o.signal, (leg) => this.transport.json(leg), span);
        b.firstToken();
        b.guard.free('end');
        span?.end('end');
        o.onFinish?.('end');
        return answer;
      } catch (err) {
        const reason = isAbortError(err) ? 'abort' : 'error';
        b.guard.free(reason);
        span?.end(reason, err);
        o.onFinish?.(reason, err);
        throw err;
      }
    }
    // Held leg: runs on its own controller; the client's leaving only bounds it by the release timeout.
    const leg = new Cancellation();
    const span = o.trace?.leg(this.pool.name, b.worker, b.decision.dpRank, false);
    const settled = this.send(b, route, body, o, leg.signal, (l) => this.transport.json(l), span).then(
      (answer) => {
        b.firstToken();
        b.guard.free('end');
        span?.end('end');
        o.onFinish?.('end');
        return answer;
      },
      (err: unknown) => {
        const reason = isAbortError(err) ? 'abort' : 'error';
        b.guard.free(reason);
        span?.end(reason, err);
        o.onFinish?.(reason, err);
        throw err;
      },
    );
    return this.unlessClientLeaves(settled, o.signal, () => {
      const timer = setTimeout(() => leg.abort(), this.releaseTimeoutMs);
      timer.unref();
      this.track(
        settled
          .then(
            () => {},
            () => {},
          )
          .finally(() => clearTimeout(timer)),
      );
    });
  }

  /** Sends a booked, streamed leg; resolves once the engine answered with its stream. */
  async stream(b: Booking, route: OpenAiRoute, body: LegBody, o: LegOptions): Promise<GuardedStream> {
    const hold = o.holdUntilFirstEvent === true;
    if (!hold && o.signal.aborted) return this.refuse(b, o.signal);
    const leg = new Cancellation();
    const span = o.trace?.leg(this.pool.name, b.worker, b.decision.dpRank, true);
    const onFinish = span ? (reason: FreeReason, err?: unknown) => (span.end(reason, err), o.onFinish?.(reason, err)) : o.onFinish;
    const opening = this.send(b, route, body, o, hold ? leg.signal : o.signal, (l) => this.transport.stream(l), span);
    let handedOver = false;
    let engine;
    try {
      engine = hold
        ? await this.unlessClientLeaves(opening, o.signal, () => {
            // The client left before the engine answered: finish the handoff in the background,
            // then free the booking.
            handedOver = true;
            // The release timeout bounds the whole background leg, the wait for its answer included.
            const timer = setTimeout(() => leg.abort(), this.releaseTimeoutMs);
            timer.unref();
            const release = opening.then((s) => releaseThenClose(new FirstEventSource(s), this.releaseTimeoutMs, () => leg.abort()));
            this.track(
              release.finally(() => {
                clearTimeout(timer);
                b.guard.free('abort');
                onFinish?.('abort');
              }),
            );
          })
        : await opening;
    } catch (err) {
      if (!handedOver) {
        // Nothing else frees a leg whose stream never opened (a failed failover freed only its old decision).
        const reason = isAbortError(err) ? 'abort' : 'error';
        b.guard.free(reason);
        onFinish?.(reason, err);
      }
      throw err;
    }
    let source: LegStream | FirstEventSource = engine;
    let cancel = (): void | Promise<void> => engine.cancel();
    if (hold) {
      // Closed before its first event, the leg runs on until its KV pull is done.
      const watched = new FirstEventSource(engine);
      source = watched;
      cancel = () => {
        if (watched.started) return engine.cancel();
        const release = releaseThenClose(watched, this.releaseTimeoutMs, () => leg.abort());
        this.track(release);
        return release;
      };
    }
    let tokenSeen = false;
    return new GuardedStream({
      source,
      cancel,
      guard: b.guard,
      abandonAfterMs: this.abandonAfterMs,
      signal: o.signal,
      onEvent: (ev) => {
        if (carriesToken(ev)) {
          if (span && !tokenSeen) {
            tokenSeen = true;
            span.firstToken();
          }
          b.firstToken();
          if (this.trackOutputBlocks) b.outputTokens(1);
        }
        o.onEvent?.(ev);
      },
      onFinish,
    });
  }

  /** An engine session call through the pool's transport (nothing to call when it has no session API). */
  async session(call: SessionCall): Promise<void> {
    await this.transport.session?.(call);
  }

  /** Calls `fn` whenever the pool's booked prefill load drops (a first token, a freed booking); returns an unsubscribe. */
  onLoadDrop(fn: () => void): () => void {
    this.loadDropListeners.add(fn);
    return () => this.loadDropListeners.delete(fn);
  }

  stats(): KvRouterStats {
    return withFields(this.counts, { finished: copyFields(this.counts.finished), releasing: this.releases.size });
  }

  /**
   * Sends the leg through `call`; a failure before the engine accepted it moves the booking to
   * another worker and sends again, at most maxRetries times. Every attempt's outcome goes to the
   * pool (outlier detection).
   */
  private async send<T>(
    b: Booking,
    route: OpenAiRoute,
    body: LegBody,
    o: LegOptions,
    signal: SignalLike,
    call: (leg: Leg) => Promise<T>,
    span?: LegTrace,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const worker = b.worker.id;
      const onSent = span ? () => (span.sent(), o.onSent?.(b)) : o.onSent && (() => o.onSent!(b));
      let result: T;
      try {
        const legBody = typeof body === 'function' ? body(b) : body;
        const sent = o.enginePriority === undefined ? legBody : withEnginePriority(legBody, b.worker.kind, o.enginePriority);
        const leg: Leg = { worker: b.worker, dpRank: b.decision.dpRank, route, body: sent, requestId: o.requestId, signal, onSent };
        if (span) leg.trace = span.context;
        result = await call(leg);
      } catch (err) {
        const outcome = outcomeOf(err);
        if (outcome) this.pool.recordOutcome(worker, outcome);
        if (!(err instanceof EngineError) || err.mayHaveAccepted || attempt > this.maxRetries || signal.aborted || !this.move(b, worker)) throw err;
        this.counts.retries++;
        span?.retried(err.failure, b.worker, b.decision.dpRank);
        this.onRetry?.({
          pool: this.pool.name,
          requestId: o.requestId,
          traceId: o.trace?.traceId,
          worker,
          to: b.worker.id,
          reason: err.failure,
          attempt,
          error: err,
        });
        continue;
      }
      span?.firstByte();
      this.pool.recordOutcome(worker, 'answered');
      return result;
    }
  }

  /**
   * Routes a leg that failed on `failed` again, without the workers it failed on: the old decision
   * is freed first, then the new one booked (a leg never holds two). False when it cannot move
   * (no failover plan, pinned to its worker, no other worker); the old decision is kept then.
   */
  private move(b: Booking, failed: number): boolean {
    const plan = b.failover;
    if (!plan) return false;
    plan.failed.add(failed);
    const allowed = this.pool.selectable().filter((id) => !plan.failed.has(id) && (!plan.accept || plan.accept(this.pool.get(id)!)));
    const pin = plan.route.pinnedWorker;
    if (allowed.length === 0 || (pin !== undefined && !allowed.includes(pin))) return false;
    let peek: RoutingDecision;
    try {
      peek = this.core.query(plan.tokens, withFields(plan.route, { allowedWorkers: allowed }));
    } catch {
      return false; // refused (backpressure, busy workers): the leg fails with its engine's error
    }
    // Freeing only lowers the load, so the peeked worker still fits; pinned, no tie-break differs.
    b.guard.free('error');
    const decision = this.core.route(plan.tokens, withFields(plan.route, { allowedWorkers: allowed, pinnedWorker: peek.worker, pinnedDpRank: peek.dpRank }));
    b.moveTo(decision, this.workerOf(decision), this.guardOf(decision));
    return true;
  }

  private workerOf(decision: RoutingDecision): WorkerInfo {
    const worker = this.pool.get(decision.worker);
    if (!worker) {
      // The core and the pool always hold the same workers; free rather than leak if they ever differ.
      this.core.free(decision.requestId);
      throw new Error(`internal: routing chose worker ${decision.worker}, which is not in pool '${this.pool.name}'`);
    }
    return worker;
  }

  private guardOf(decision: RoutingDecision): BookingGuard {
    this.counts.booked++;
    return new BookingGuard(this.core, decision.requestId, (reason) => {
      this.counts.finished[reason]++;
      this.loadDropped();
    });
  }

  /** Resolves when no leg is being kept running for a KV handoff. */
  async idle(): Promise<void> {
    while (this.releases.size > 0) await Promise.all([...this.releases]);
  }

  private track(p: Promise<unknown>): void {
    const done = p.then(
      () => {},
      () => {},
    );
    this.releases.add(done);
    void done.finally(() => {
      this.releases.delete(done);
      this.counts.released++;
    });
  }

  /**
   * `work`, unless the client's signal fires first: then `onLeave` takes the work over in the
   * background and the caller gets an AbortError at once.
   */
  private unlessClientLeaves<T>(work: Promise<T>, signal: SignalLike, onLeave: () => void): Promise<T> {
    if (signal.aborted) {
      onLeave();
      return Promise.reject(abortError(signal));
    }
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        onLeave();
        reject(abortError(signal));
      };
      signal.addEventListener('abort', leave, { once: true });
      work.then(
        (v) => {
          signal.removeEventListener('abort', leave);
          resolve(v);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', leave);
          reject(err);
        },
      );
    });
  }

  private refuse(b: Booking, signal: SignalLike): never {
    b.guard.free('abort');
    throw abortError(signal);
  }

  private checkPinned(worker: number | undefined): void {
    if (worker !== undefined && !this.pool.has(worker)) {
      throw new UnknownWorkerHintError(`worker ${worker} is not a worker of pool '${this.pool.name}'`);
    }
  }
}

/** What an attempt's failure says about its worker (outlier detection); undefined: nothing. */
function outcomeOf(err: unknown): LegOutcome | undefined {
  if (!(err instanceof EngineError)) return undefined;
  if (!err.mayHaveAccepted) return 'connect_failure';
  if (err.failure !== 'engine_rejected') return undefined;
  return err.status >= 500 ? 'server_error' : 'answered';
}
