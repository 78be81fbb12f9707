// PrefillRouter: the front door of routing (Dynamo's PrefillRouter). Without selectable prefill
// workers it serves aggregated, straight to the decode pool (or refuses, when disaggregation is
// enforced). With them it books a prefill worker (peeked first, so a worker that cannot be used
// never advances a round-robin rotation) and runs the handoff of that worker's engine kind:
// sequential (vLLM NIXL, TensorRT-LLM; prefill/sequential.ts) or bootstrap (SGLang;
// prefill/bootstrap.ts). A prefill that fails falls back to aggregated serving when allowed.
import type { SignalLike } from '../util/cancellation.js';
import type { RoutingDecision } from '../core/routing-core.js';
import type { ServeMode } from '../core/vocabulary.js';
import { describe } from '../util/validate.js';
import { MissingRoutingHintError } from '../core/routing-errors.js';
import { completionAsEvents, wantsUsage } from '../engines/completion-events.js';
import { EngineError, abortError } from '../engines/errors.js';
import { randomRoomValue } from '../engines/bootstrap-room.js';
import { carriesToken } from '../engines/sse.js';
import type { SseEvent } from '../engines/types.js';
import { attributePrefillWorker } from './attribution.js';
import { type FreeReason, MappedStream } from './booking-guard.js';
import { runBootstrap } from './prefill/bootstrap.js';
import { runSequential } from './prefill/sequential.js';
import { DisaggregationRequiredError, PrefillUnusableError } from './errors.js';
import type { RoutingHints } from './hints.js';
import { type BoundWorker, type SessionBinding, SessionAffinity } from './session-affinity.js';
import { type Booking, KvRouter, type LegOptions, type LegRoute } from './kv-router.js';
import { type PhaseRouting, RequestTracker, type TrackerSummary, defaultClock } from './request-tracker.js';
import { type RoutedResponse, type RouterRequest, expectedOutputTokens, validateRouterRequest } from './router-request.js';
import { type PromptTokensDetails, cachedTokensOf, usageOf, withPromptTokensDetails } from './usage.js';
import { withFields } from '../util/objects.js';

export type { ServeMode };

export interface PrefillRouterOptions {
  /** Router of the prefill pool (it may be empty: then requests are served aggregated). */
  prefill: KvRouter;
  /** Router of the decode pool (decode and aggregated workers). */
  decode: KvRouter;
  /** Refuse requests when no prefill worker is selectable, instead of serving them aggregated. Default false. */
  enforceDisagg?: boolean;
  /** Serve a request aggregated when its prefill leg fails. Default true. */
  fallbackToAggregated?: boolean;
  /** Source of 63-bit random room values (tests pin it). */
  randomRoom?: () => bigint;
  clock?: () => number;
  /** Session affinity: requests with a session id go where the session's earlier requests went. */
  sessions?: SessionAffinity;
  /** Called once per request when its last leg finished, with its tracker's summary. */
  onRequestDone?(done: RequestDone): void;
  onEvent?(event: PrefillRouterEvent): void;
}

export interface RequestDone {
  summary: TrackerSummary;
  mode: ServeMode;
  outcome: FreeReason;
}

export type PrefillRouterEvent =
  | { type: 'deactivated' }
  | { type: 'reactivated' }
  | { type: 'fallback'; requestId: string; error: unknown };

export interface RouteQuery {
  mode: 'aggregated' | 'disaggregated';
  prefill?: RoutingDecision;
  decode: RoutingDecision;
}

export interface PrefillRouterStats {
  requests: number;
  aggregated: number;
  disaggregated: number;
  fallbacks: number;
  finishedAtPrefill: number;
  deactivations: number;
  reactivations: number;
}

/** Per-request state the handoff paths share. */
export interface RequestContext {
  req: RouterRequest;
  tracker: RequestTracker;
  /** The client asked for a stream. */
  stream: boolean;
}

export class PrefillRouter {
  readonly prefill: KvRouter;
  readonly decode: KvRouter;
  readonly enforceDisagg: boolean;
  readonly fallbackToAggregated: boolean;
  readonly randomRoom: () => bigint;
  readonly sessions?: SessionAffinity;
  private readonly clock: () => number;
  private readonly onRequestDone?: (done: RequestDone) => void;
  private readonly onEvent?: (event: PrefillRouterEvent) => void;
  private wasActive: boolean;
  private readonly unsubscribe: () => void;
  private readonly counts: PrefillRouterStats = {
    requests: 0,
    aggregated: 0,
    disaggregated: 0,
    fallbacks: 0,
    finishedAtPrefill: 0,
    deactivations: 0,
    reactivations: 0,
  };

  constructor(o: PrefillRouterOptions) {
    if (o === null || typeof o !== 'object') throw new TypeError(`options must be an object, got ${describe(o)}`);
    if (!(o.prefill instanceof KvRouter)) throw new TypeError(`options.prefill must be a KvRouter, got ${describe(o.prefill)}`);
    if (!(o.decode instanceof KvRouter)) throw new TypeError(`options.decode must be a KvRouter, got ${describe(o.decode)}`);
    if (o.prefill === o.decode || o.prefill.pool === o.decode.pool) throw new TypeError('options.prefill and options.decode must be routers of two different pools');
    for (const k of ['enforceDisagg', 'fallbackToAggregated'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new TypeError(`options.${k} must be a boolean, got ${describe(o[k])}`);
    }
    for (const k of ['randomRoom', 'clock', 'onRequestDone', 'onEvent'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'function') throw new TypeError(`options.${k} must be a function, got ${describe(o[k])}`);
    }
    this.prefill = o.prefill;
    this.decode = o.decode;
    this.enforceDisagg = o.enforceDisagg ?? false;
    this.fallbackToAggregated = o.fallbackToAggregated ?? true;
    this.randomRoom = o.randomRoom ?? randomRoomValue;
    this.clock = o.clock ?? defaultClock;
    if (o.sessions !== undefined && !(o.sessions instanceof SessionAffinity)) throw new TypeError(`options.sessions must be a SessionAffinity, got ${describe(o.sessions)}`);
    this.sessions = o.sessions;
    this.onRequestDone = o.onRequestDone;
    this.onEvent = o.onEvent;
    this.wasActive = this.active;
    this.unsubscribe = this.prefill.pool.onChange(() => this.activationChanged());
  }

  /** Disaggregated serving is on: at least one prefill worker is selectable. */
  get active(): boolean {
    return this.prefill.pool.selectableCount > 0;
  }

  /** Whether a request could be served now (false under enforceDisagg without prefill workers). */
  canServeRequests(): boolean {
    if (this.decode.pool.selectableCount === 0) return false;
    return this.active || !this.enforceDisagg;
  }

  /**
   * Routes and runs one request. Resolves once the answer can be relayed: a stream (pull it; it
   * ends, fails or is closed exactly once, freeing every booking) or a JSON body. Rejects with a
   * RoutingError (no worker, backpressure, missing hint), an EngineError, an AbortError when the
   * client's signal fired, or a TypeError/RangeError for a malformed request.
   */
  async handle(request: RouterRequest): Promise<RoutedResponse> {
    const req = this.withSessionPins(validateRouterRequest(request));
    if (req.signal.aborted) throw abortError(req.signal);
    this.counts.requests++;
    const ctx: RequestContext = { req, tracker: new RequestTracker(req.requestId, this.clock), stream: req.body.stream === true };
    if (!this.active) return this.servePassThrough(ctx);
    const permit = await ctx.tracker.setPhase('prefill', req.signal);
    let booking: Booking;
    try {
      // No prefill work (and no rotation step) for a request no decode worker could finish.
      this.checkDecodeAvailable(ctx);
      booking = this.bookPrefill(ctx);
    } catch (err) {
      permit.release();
      if (!this.active) return this.servePassThrough(ctx); // the last prefill worker left meanwhile
      if (err instanceof PrefillUnusableError) return this.prefillFailed(ctx, err);
      throw err;
    }
    this.counts.disaggregated++;
    return booking.worker.kind === 'sglang' ? runBootstrap(this, ctx, booking, permit) : runSequential(this, ctx, booking, permit);
  }

  /** What handle() would choose now, without booking or advancing anything (for explanations). */
  query(tokens: Uint32Array, clientHints: RoutingHints = {}, opts: { requestId?: string; loraName?: string } = {}): RouteQuery {
    const base = { requestId: opts.requestId, loraName: opts.loraName };
    const sessionId = clientHints.sessionId;
    const hints = sessionId === undefined || !this.sessions ? clientHints : this.pinned(clientHints, this.sessions.peek(sessionId, this.canServe) ?? {});
    if (!this.active) {
      if (this.enforceDisagg) throw new DisaggregationRequiredError();
      return { mode: 'aggregated', decode: this.decode.query(tokens, withFields(base, { pinnedWorker: hints.workerId, pinnedDpRank: hints.dpRank })) };
    }
    this.requirePrefillHint(hints);
    return {
      mode: 'disaggregated',
      prefill: this.prefill.query(tokens, withFields(base, { pinnedWorker: hints.prefillWorkerId, pinnedDpRank: hints.prefillDpRank })),
      decode: this.decode.query(tokens, withFields(base, { pinnedWorker: hints.workerId, pinnedDpRank: hints.dpRank, overlapScoreCredit: 0 })),
    };
  }

  stats(): PrefillRouterStats {
    return { ...this.counts };
  }

  /** Resolves once no leg is kept running in the background (KV handoffs of clients that left). */
  async idle(): Promise<void> {
    await Promise.all([this.prefill.idle(), this.decode.idle()]);
  }

  /** Stops following the prefill pool (the routers and pools stay usable by their owner). */
  close(): void {
    this.unsubscribe();
  }

  // ---- used by the handoff paths ----

  /** The decode leg of a disaggregated request: credit 0, no assumed KV reuse (the seeds' decode override). */
  decodeLeg(ctx: RequestContext): LegRoute {
    const { req } = ctx;
    return {
      requestId: req.requestId,
      loraName: req.loraName,
      pinnedWorker: req.hints.workerId,
      pinnedDpRank: req.hints.dpRank,
      expectedOutputTokens: expectedOutputTokens(req.body),
      overlapScoreCredit: 0,
    };
  }

  /**
   * Fails fast, before any prefill work, when no decode worker could take the request: a prefill
   * whose decode never comes would strand its KV blocks on the prefill worker.
   */
  private checkDecodeAvailable(ctx: RequestContext): void {
    const pin = ctx.req.hints.workerId;
    if (this.decode.pool.selectableCount === 0 || (pin !== undefined && !this.decode.pool.isSelectable(pin))) {
      this.decode.query(ctx.req.tokens, this.decodeLeg(ctx)); // throws the core's own refusal
    }
  }

  /** A failed prefill leg: aggregated serving when allowed and the failure is not the request's fault. */
  async prefillFailed(ctx: RequestContext, err: unknown): Promise<RoutedResponse> {
    if (ctx.req.signal.aborted) throw abortError(ctx.req.signal);
    if (!this.fallbackToAggregated || isClientFault(err)) throw err;
    this.counts.fallbacks++;
    this.onEvent?.({ type: 'fallback', requestId: ctx.req.requestId, error: err });
    return this.serveAggregated(ctx, 'fallback');
  }

  /** Prefill completed the request (EOS): its answer goes to the client, retold as a stream if asked. */
  finishedAtPrefill(ctx: RequestContext, prefill: Booking, answer: Record<string, unknown>): RoutedResponse {
    this.counts.finishedAtPrefill++;
    ctx.tracker.recordTokens(1);
    const usage = (answer as { usage?: unknown }).usage;
    if (usage && typeof usage === 'object') this.recordUsage(ctx, usage as Record<string, unknown>);
    this.done(ctx, 'disaggregated', 'end');
    const payload = ctx.stream ? { stream: eventsOf(completionAsEvents(ctx.req.route, answer, wantsUsage(ctx.req.body))) } : { body: answer };
    return this.respond(ctx, 'disaggregated', prefill, undefined, payload);
  }

  /** Leg options that feed the tracker and report the request's end. */
  legOptions(ctx: RequestContext, mode: ServeMode, holdUntilFirstEvent: boolean, signal: SignalLike = ctx.req.signal): LegOptions {
    return {
      requestId: ctx.req.requestId,
      signal,
      holdUntilFirstEvent,
      onEvent: (ev) => {
        if (carriesToken(ev)) ctx.tracker.recordTokens(1);
      },
      onFinish: (reason) => this.done(ctx, mode, reason),
    };
  }

  /** The relayed stream: the prefill's cache details injected into the usage chunk, usage recorded. */
  relay(ctx: RequestContext, stream: AsyncIterator<SseEvent>, details: () => PromptTokensDetails | undefined | Promise<PromptTokensDetails | undefined>): AsyncIterable<SseEvent> {
    const withDetails = async (ev: SseEvent) => {
      const out = withPromptTokensDetails(ev, await details());
      this.recordUsage(ctx, usageOf(out)!);
      return out;
    };
    // Token events pass through synchronously: only the usage chunk waits for the details.
    return new MappedStream(stream, (ev) => (usageOf(ev) ? withDetails(ev) : ev));
  }

  recordUsage(ctx: RequestContext, usage: Record<string, unknown>): void {
    const c = cachedTokensOf(usage);
    if (c) ctx.tracker.recordUsage(c.prompt, c.cached);
  }

  recordRouting(ctx: RequestContext, phase: 'prefill' | 'decode' | 'aggregated', b: Booking): void {
    ctx.tracker.recordRouting(phase, routingOf(b.decision));
  }

  respond(
    ctx: RequestContext,
    mode: ServeMode,
    prefill: Booking | undefined,
    decode: Booking | undefined,
    payload: { stream?: AsyncIterable<SseEvent>; body?: unknown },
  ): RoutedResponse {
    const sessionId = ctx.req.hints.sessionId;
    if (sessionId !== undefined && this.sessions) {
      const at = (b: Booking | undefined) => b && { worker: b.decision.worker, dpRank: b.decision.dpRank };
      this.sessions.bind(sessionId, { decode: at(decode), prefill: mode === 'disaggregated' ? at(prefill) : undefined });
    }
    const headers: Record<string, string> = { 'x-request-id': ctx.req.requestId, 'x-kvroute-mode': mode };
    const direct = ctx.req.hints.prefillWorkerId === undefined ? undefined : { worker: ctx.req.hints.prefillWorkerId, dpRank: ctx.req.hints.prefillDpRank };
    const booked = prefill && { worker: prefill.decision.worker, dpRank: prefill.decision.dpRank };
    const who = mode === 'disaggregated' ? attributePrefillWorker(booked, direct, payload.body, (w) => this.prefill.pool.get(w)?.dpSize) : undefined;
    if (who) {
      headers['x-kvroute-prefill-worker'] = String(who.worker);
      if (who.dpRank !== undefined) headers['x-kvroute-prefill-dp-rank'] = String(who.dpRank);
    }
    if (decode) {
      headers['x-kvroute-decode-worker'] = String(decode.decision.worker);
      headers['x-kvroute-decode-dp-rank'] = String(decode.decision.dpRank);
    }
    const computing = mode === 'disaggregated' ? prefill : decode;
    if (computing) headers['x-kvroute-overlap-blocks'] = String(computing.decision.overlapBlocks);
    return { status: 200, headers, ...payload };
  }

  // ---- private ----

  /** The request with its session's workers pinned where the client pinned nothing itself. */
  private withSessionPins(req: RouterRequest): RouterRequest {
    const sessionId = req.hints.sessionId;
    if (sessionId === undefined || !this.sessions) return req;
    const hints = this.pinned(req.hints, this.sessions.resolve(sessionId, this.canServe));
    return hints === req.hints ? req : withFields(req, { hints });
  }

  /** A session's bound worker is used while selectable (one that left, drained or failed is routed anew). */
  private readonly canServe = (pool: keyof SessionBinding, worker: number): boolean => (pool === 'decode' ? this.decode : this.prefill).pool.isSelectable(worker);

  /** `hints` with the bound workers (and their ranks, while still in range) filling what is unset. */
  private pinned(hints: RoutingHints, bound: SessionBinding): RoutingHints {
    const pins: RoutingHints = {};
    const rankOf = (router: KvRouter, w: BoundWorker) => (w.dpRank < (router.pool.get(w.worker)?.dpSize ?? 1) ? w.dpRank : undefined);
    if (hints.workerId === undefined && bound.decode) {
      pins.workerId = bound.decode.worker;
      if (hints.dpRank === undefined) pins.dpRank = rankOf(this.decode, bound.decode);
    }
    if (hints.prefillWorkerId === undefined && bound.prefill) {
      pins.prefillWorkerId = bound.prefill.worker;
      if (hints.prefillDpRank === undefined) pins.prefillDpRank = rankOf(this.prefill, bound.prefill);
    }
    return pins.workerId === undefined && pins.prefillWorkerId === undefined ? hints : withFields(hints, pins);
  }

  private servePassThrough(ctx: RequestContext): Promise<RoutedResponse> {
    if (this.enforceDisagg) throw new DisaggregationRequiredError();
    return this.serveAggregated(ctx, 'aggregated');
  }

  private async serveAggregated(ctx: RequestContext, mode: 'aggregated' | 'fallback'): Promise<RoutedResponse> {
    const { req } = ctx;
    const permit = await ctx.tracker.setPhase('aggregated', req.signal);
    let booking: Booking;
    try {
      booking = this.decode.book(req.tokens, {
        requestId: req.requestId,
        loraName: req.loraName,
        pinnedWorker: req.hints.workerId,
        pinnedDpRank: req.hints.dpRank,
        expectedOutputTokens: expectedOutputTokens(req.body),
      });
      this.recordRouting(ctx, 'aggregated', booking);
    } finally {
      permit.release();
    }
    if (mode === 'aggregated') this.counts.aggregated++;
    const opts = this.legOptions(ctx, mode, false);
    if (ctx.stream) {
      const stream = await this.decode.stream(booking, req.route, req.body, opts);
      return this.respond(ctx, mode, undefined, booking, { stream: this.relay(ctx, stream, () => undefined) });
    }
    const answer = await this.decode.json(booking, req.route, req.body, opts);
    const usage = (answer as { usage?: unknown } | null)?.usage;
    if (usage && typeof usage === 'object') this.recordUsage(ctx, usage as Record<string, unknown>);
    return this.respond(ctx, mode, undefined, booking, { body: answer });
  }

  /** Peeks the prefill worker, checks it can be used, then books it (advancing any rotation). */
  private bookPrefill(ctx: RequestContext): Booking {
    const { req } = ctx;
    this.requirePrefillHint(req.hints);
    const leg: LegRoute = { requestId: req.requestId, loraName: req.loraName, pinnedWorker: req.hints.prefillWorkerId, pinnedDpRank: req.hints.prefillDpRank };
    const peek = this.prefill.query(req.tokens, leg);
    const worker = this.prefill.pool.get(peek.worker);
    if (worker?.kind === 'sglang' && (worker.bootstrapHost === undefined || worker.bootstrapPort === undefined)) {
      throw new PrefillUnusableError(`SGLang prefill worker ${worker.id} has no bootstrap host and port configured`);
    }
    // Round robin books the peeked worker by itself (nothing ran in between); other policies are
    // pinned to it so that random tie-breaks cannot choose differently.
    const pinned = this.prefill.policy === 'round_robin' ? leg : withFields(leg, { pinnedWorker: peek.worker, pinnedDpRank: peek.dpRank });
    return this.prefill.book(req.tokens, pinned);
  }

  private requirePrefillHint(hints: RoutingHints): void {
    if (this.prefill.policy === 'direct' && hints.prefillWorkerId === undefined) {
      throw new MissingRoutingHintError('direct prefill routing needs the prefill worker: send the x-prefill-instance-id header (or nvext.prefill_worker_id)');
    }
  }

  private done(ctx: RequestContext, mode: ServeMode, outcome: FreeReason): void {
    this.onRequestDone?.({ summary: ctx.tracker.summary(), mode, outcome });
  }

  private activationChanged(): void {
    const now = this.active;
    if (now === this.wasActive) return;
    this.wasActive = now;
    if (now) this.counts.reactivations++;
    else this.counts.deactivations++;
    this.onEvent?.({ type: now ? 'reactivated' : 'deactivated' });
  }
}

/** The tracker's view of a routing decision. */
export function routingOf(d: RoutingDecision): PhaseRouting {
  return { worker: d.worker, dpRank: d.dpRank, overlapBlocks: d.overlapBlocks, promptTokens: d.promptTokens, cachedTokens: d.cachedTokens };
}

/** An engine's own 4xx verdict on the request would repeat on any worker: no fallback for it. */
function isClientFault(err: unknown): boolean {
  return err instanceof EngineError && err.failure === 'engine_rejected' && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

/** A fixed list of events as a pull-based stream. */
function eventsOf(events: SseEvent[]): AsyncIterable<SseEvent> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        next: async () => (i < events.length ? { value: events[i++], done: false } : { value: undefined, done: true }),
        return: async () => {
          i = events.length;
          return { value: undefined, done: true };
        },
      };
    },
  };
}
