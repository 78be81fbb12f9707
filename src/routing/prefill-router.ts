// PrefillRouter: the front door of routing (Dynamo's PrefillRouter). Each request's mode is chosen
// first (prefill/mode.ts): without selectable prefill workers it is served aggregated, straight
// to the decode pool (or refused, when disaggregation is enforced; prefill/aggregated.ts). With
// them the router checks that a decode worker could take the request, books a prefill worker
// (peeked first, so a worker that cannot be used never advances a round-robin rotation) and runs
// the handoff of that worker's engine kind: sequential (vLLM NIXL, TensorRT-LLM;
// prefill/sequential.ts) or bootstrap (SGLang; prefill/bootstrap.ts). The paths take the
// request's context (prefill/context.ts), never the router. A prefill that fails falls back to
// aggregated serving when allowed.
//
// Conditional disaggregation (prefill/mode.ts) may serve a request aggregated even with prefill
// workers, when the remote prefill does not pay. Under overload, each pool's router queue
// (queue/) holds requests until a worker of the pool that computes their prompt has room: the
// prefill pool for a disaggregated request, the decode pool for an aggregated one.
import type { RoutingDecision } from '../core/routing-core.js';
import type { PoolName, ServeMode } from '../core/vocabulary.js';
import { describe } from '../util/validate.js';
import { MissingRoutingHintError, RoutingError } from '../core/routing-errors.js';
import { abortError } from '../engines/errors.js';
import { randomRoomValue } from '../engines/bootstrap-room.js';
import type { Booking } from './booking.js';
import { prefillFailed, serveAggregated } from './prefill/aggregated.js';
import { runBootstrap } from './prefill/bootstrap.js';
import { RequestContext, type RequestDone, type RouterEnv, routingPriority } from './prefill/context.js';
import { admitted } from './prefill/admission.js';
import { estimateModes } from './prefill/estimate.js';
import {
  chooseMode,
  conditionalSettings,
  type ConditionalDisaggSettings,
  DEFAULT_CONDITIONAL_DISAGG,
  type ModeDecision,
  type ModeReason,
  MODE_REASONS,
} from './prefill/mode.js';
import { AdmissionQueue, type QueueEvent, type QueueSettings, type QueueStats } from './queue/admission-queue.js';
import { runSequential } from './prefill/sequential.js';
import { PrefillUnusableError } from './errors.js';
import type { RoutingHints } from './hints.js';
import { type BoundWorker, type SessionBinding, SessionAffinity } from './session-affinity.js';
import { SessionControl, type SessionControlOptions } from './session-control.js';
import { KvRouter, type LegRoute } from './kv-router.js';
import { defaultClock } from './request-tracker.js';
import { realTimers, type Timers } from '../util/timers.js';
import { type RoutedResponse, type RouterRequest, validateRouterRequest } from './router-request.js';
import { copyFields, withFields } from '../util/objects.js';
import type { SignalLike } from '../util/cancellation.js';

/** The signal of a query, which has no client to leave. */
const NEVER: SignalLike = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {} };

const NO_ESTIMATE = (): never => {
  throw new Error('internal: the basic mode needs no estimate');
};

function loadOf(router: KvRouter): ReadonlyArray<{ worker: number; dpRank: number; prefillTokens: number }> {
  return router.core.load?.() ?? [];
}

export type { RequestDone, ServeMode };

export interface PrefillRouterOptions {
  /** Router of the prefill pool (it may be empty: then requests are served aggregated). */
  prefill: KvRouter;
  /** Router of the decode pool (decode and aggregated workers). */
  decode: KvRouter;
  /** Refuse requests when no prefill worker is selectable, instead of serving them aggregated. Default false. */
  enforceDisagg?: boolean;
  /** Serve a request aggregated when its prefill leg fails. Default true. */
  fallbackToAggregated?: boolean;
  /**
   * Forward a request's priority class (hints.priority) to its engines, in the body's `priority`
   * field as each engine kind reads it: for engines started with priority scheduling (vLLM's
   * --scheduling-policy priority, SGLang's --enable-priority-scheduling). Default false.
   */
  forwardPriority?: boolean;
  /** Source of 63-bit random room values (tests pin it). */
  randomRoom?: () => bigint;
  clock?: () => number;
  /** Timers on `clock` (the router queue's wait limit); default Node's, unref'd. Replay gives virtual ones. */
  timers?: Timers;
  /** Session affinity: requests with a session id go where the session's earlier requests went. */
  sessions?: SessionAffinity;
  /** Called once per request when its last leg finished, with its tracker's summary. */
  onRequestDone?(done: RequestDone): void;
  onEvent?(event: PrefillRouterEvent): void;
  /** The router queue of each pool (off unless given a threshold). */
  queue?: Partial<QueueSettings>;
  /** Sees the router queues' events (metrics). */
  onQueueEvent?(pool: PoolName, event: QueueEvent): void;
  /** Conditional disaggregation: per request, aggregated when the remote prefill does not pay (off by default). */
  conditionalDisagg?: Partial<ConditionalDisaggSettings>;
  /** Limits of session_control's engine sessions. */
  sessionControl?: SessionControlOptions;
}

export type { PoolName };

export type PrefillRouterEvent = { type: 'deactivated' } | { type: 'reactivated' } | { type: 'fallback'; requestId: string; error: unknown };

export interface RouteQuery {
  mode: 'aggregated' | 'disaggregated';
  /** Why that mode (x-kvroute-mode-reason). */
  reason: ModeReason;
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
  /** Mode decisions by reason (a fallback counts as prefill_failed besides its first decision). */
  modeReasons: Record<ModeReason, number>;
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
  private readonly unsubscribe: Array<() => void>;
  private readonly env: RouterEnv;
  private readonly queues: { readonly prefill: AdmissionQueue; readonly decode: AdmissionQueue };
  private conditional: ConditionalDisaggSettings;
  /** Engine sessions opened, used and closed by requests' session_control hints. */
  readonly sessionControl: SessionControl;
  private readonly counts: PrefillRouterStats = {
    requests: 0,
    aggregated: 0,
    disaggregated: 0,
    fallbacks: 0,
    finishedAtPrefill: 0,
    deactivations: 0,
    reactivations: 0,
    modeReasons: Object.fromEntries(MODE_REASONS.map((r) => [r, 0])) as Record<ModeReason, number>,
  };

  constructor(o: PrefillRouterOptions) {
    if (o === null || typeof o !== 'object') throw new TypeError(`options must be an object, got ${describe(o)}`);
    if (!(o.prefill instanceof KvRouter)) throw new TypeError(`options.prefill must be a KvRouter, got ${describe(o.prefill)}`);
    if (!(o.decode instanceof KvRouter)) throw new TypeError(`options.decode must be a KvRouter, got ${describe(o.decode)}`);
    if (o.prefill === o.decode || o.prefill.pool === o.decode.pool)
      throw new TypeError('options.prefill and options.decode must be routers of two different pools');
    for (const k of ['enforceDisagg', 'fallbackToAggregated', 'forwardPriority'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new TypeError(`options.${k} must be a boolean, got ${describe(o[k])}`);
    }
    for (const k of ['randomRoom', 'clock', 'onRequestDone', 'onEvent', 'onQueueEvent'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'function') throw new TypeError(`options.${k} must be a function, got ${describe(o[k])}`);
    }
    this.prefill = o.prefill;
    this.decode = o.decode;
    this.enforceDisagg = o.enforceDisagg ?? false;
    this.fallbackToAggregated = o.fallbackToAggregated ?? true;
    this.randomRoom = o.randomRoom ?? randomRoomValue;
    this.clock = o.clock ?? defaultClock;
    if (o.timers !== undefined && typeof o.timers?.at !== 'function')
      throw new TypeError(`options.timers must have an at(atMs, fn) method, got ${describe(o.timers)}`);
    const timers = o.timers ?? realTimers(this.clock);
    if (o.sessions !== undefined && !(o.sessions instanceof SessionAffinity))
      throw new TypeError(`options.sessions must be a SessionAffinity, got ${describe(o.sessions)}`);
    this.sessions = o.sessions;
    this.onRequestDone = o.onRequestDone;
    this.onEvent = o.onEvent;
    this.conditional = conditionalSettings(DEFAULT_CONDITIONAL_DISAGG, o.conditionalDisagg);
    this.sessionControl = new SessionControl(
      {
        choose: (req) => {
          const d = this.decode.query(req.tokens, {
            requestId: req.requestId,
            loraName: req.loraName,
            pinnedWorker: req.hints.workerId,
            pinnedDpRank: req.hints.dpRank,
            enginePriority: routingPriority(this.env.forwardPriority, req.hints),
          });
          return { worker: this.decode.pool.get(d.worker)!, dpRank: d.dpRank };
        },
        call: (call) => this.decode.session(call),
        clock: this.clock,
      },
      o.sessionControl,
    );
    const queue = (name: PoolName, router: KvRouter) =>
      new AdmissionQueue(name, router.pool, { load: () => loadOf(router) }, this.clock, o.queue, o.onQueueEvent && ((ev) => o.onQueueEvent!(name, ev)), timers);
    this.queues = { prefill: queue('prefill', this.prefill), decode: queue('decode', this.decode) };
    this.checkQueueLoad(this.queues.prefill.settings);
    this.env = {
      prefill: this.prefill,
      decode: this.decode,
      fallbackToAggregated: this.fallbackToAggregated,
      forwardPriority: o.forwardPriority ?? false,
      randomRoom: this.randomRoom,
      sessions: this.sessions,
      queues: this.queues,
      report: {
        aggregated: () => void this.counts.aggregated++,
        fallback: (requestId, error) => {
          this.counts.fallbacks++;
          this.counts.modeReasons.prefill_failed++;
          this.onEvent?.({ type: 'fallback', requestId, error });
        },
        finishedAtPrefill: () => void this.counts.finishedAtPrefill++,
        done: (ctx, mode, outcome) => this.onRequestDone?.({ summary: ctx.tracker.summary(), mode, reason: ctx.modeReason, outcome }),
      },
    };
    this.wasActive = this.active;
    const wake = (q: AdmissionQueue) => () => q.wake();
    this.unsubscribe = [
      this.prefill.pool.onChange(() => this.activationChanged()),
      this.prefill.pool.onChange(wake(this.queues.prefill)),
      this.decode.pool.onChange(wake(this.queues.decode)),
      this.prefill.onLoadDrop(wake(this.queues.prefill)),
      this.decode.onLoadDrop(wake(this.queues.decode)),
    ];
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
    const client = validateRouterRequest(request);
    let req = this.withSessionPins(client);
    if (req.signal.aborted) throw abortError(req.signal);
    let over: (() => void) | undefined;
    let clientHints = client.hints;
    if (req.hints.sessionControl) {
      const turn = await this.sessionControl.begin(req);
      req = withFields(req, { hints: turn.hints });
      // An engine session lives on its worker: its pin holds as the client's own (no failover off it).
      clientHints = withFields(client.hints, { workerId: turn.hints.workerId, dpRank: turn.hints.dpRank });
      over = turn.over;
    }
    this.counts.requests++;
    const ctx = new RequestContext(this.env, req, this.clock, clientHints);
    if (over) ctx.whenOver(over);
    try {
      const res = await this.serve(ctx);
      ctx.settle();
      return res;
    } catch (err) {
      ctx.settle();
      throw err;
    }
  }

  private async serve(ctx: RequestContext): Promise<RoutedResponse> {
    const { req } = ctx;
    const decision = this.decide(ctx);
    ctx.modeReason = decision.reason;
    this.counts.modeReasons[decision.reason]++;
    req.trace?.mode(decision.mode, decision.reason);
    if (decision.mode === 'aggregated') return serveAggregated(ctx, 'aggregated');
    const permit = await ctx.tracker.setPhase('prefill', req.signal);
    let booking: Booking;
    try {
      // Waits its turn in the prefill pool's router queue; then, in one tick: no prefill work (and
      // no rotation step) for a request no decode worker could finish, and the prefill booked.
      booking = await admitted(ctx, this.queues.prefill, this.prefill, ctx.prefillLeg(), () => {
        this.checkDecodeAvailable(ctx);
        return this.bookPrefill(ctx);
      });
    } catch (err) {
      permit.release();
      if (!this.active && !req.signal.aborted) {
        // The last prefill worker left meanwhile.
        ctx.modeReason = this.basicMode().reason;
        req.trace?.mode('aggregated', ctx.modeReason);
        return serveAggregated(ctx, 'aggregated');
      }
      if (err instanceof PrefillUnusableError) return prefillFailed(ctx, err);
      throw err;
    }
    this.counts.disaggregated++;
    return booking.worker.kind === 'sglang' ? runBootstrap(ctx, booking, permit) : runSequential(ctx, booking, permit);
  }

  /** What handle() would choose now, without booking or advancing anything (for explanations). */
  query(tokens: Uint32Array, clientHints: RoutingHints = {}, opts: { requestId?: string; loraName?: string } = {}): RouteQuery {
    const base: Omit<LegRoute, 'requestId'> & { requestId?: string } = { requestId: opts.requestId, loraName: opts.loraName };
    const sessionId = clientHints.sessionId;
    const affine = sessionId === undefined || !this.sessions ? clientHints : this.pinned(clientHints, this.sessions.peek(sessionId, this.canServe) ?? {});
    const hints = this.sessionControl.peek(affine);
    const probe = new RequestContext(
      this.env,
      { route: '/v1/completions', body: {}, tokens, requestId: opts.requestId ?? 'query', hints, signal: NEVER, loraName: opts.loraName },
      this.clock,
    );
    const decision = this.decide(probe);
    base.enginePriority = probe.routingPriority;
    if (decision.mode === 'aggregated') {
      return {
        mode: 'aggregated',
        reason: decision.reason,
        decode: this.decode.query(tokens, withFields(base, { pinnedWorker: hints.workerId, pinnedDpRank: hints.dpRank })),
      };
    }
    this.requirePrefillHint(hints);
    return {
      mode: 'disaggregated',
      reason: decision.reason,
      prefill: this.prefill.query(tokens, withFields(base, { pinnedWorker: hints.prefillWorkerId, pinnedDpRank: hints.prefillDpRank })),
      decode: this.decode.query(tokens, withFields(base, { pinnedWorker: hints.workerId, pinnedDpRank: hints.dpRank, overlapScoreCredit: 0 })),
    };
  }

  /** The router queues' settings (the same for both pools). */
  get queueSettings(): Readonly<QueueSettings> {
    return this.queues.prefill.settings;
  }

  /** Changes the router queues' settings at runtime, checked whole first (TypeError/RangeError: nothing changed). */
  setQueueSettings(settings: Partial<QueueSettings>): QueueSettings {
    const next = this.queues.prefill.update(settings);
    this.checkQueueLoad(next);
    this.queues.decode.update(next);
    return next;
  }

  queueStats(): Record<PoolName, QueueStats> {
    return { prefill: this.queues.prefill.stats(), decode: this.queues.decode.stats() };
  }

  get conditionalDisagg(): Readonly<ConditionalDisaggSettings> {
    return this.conditional;
  }

  /** Changes conditional disaggregation at runtime, checked whole first. */
  setConditionalDisagg(settings: Partial<ConditionalDisaggSettings>): ConditionalDisaggSettings {
    this.conditional = conditionalSettings(this.conditional, settings);
    return this.conditional;
  }

  stats(): PrefillRouterStats {
    return withFields(this.counts, { modeReasons: copyFields(this.counts.modeReasons) });
  }

  /** Resolves once no leg is kept running in the background (KV handoffs of clients that left) and no session call is in flight. */
  async idle(): Promise<void> {
    await Promise.all([this.prefill.idle(), this.decode.idle(), this.sessionControl.idle()]);
  }

  /** Stops following the pools and refuses requests still waiting in a router queue (the routers and pools stay usable by their owner). */
  close(): void {
    for (const off of this.unsubscribe) off();
    void this.sessionControl.closeAll();
    const closed = new RoutingError('the router is shutting down', 'router_closed');
    this.queues.prefill.close(closed);
    this.queues.decode.close(closed);
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
  private readonly canServe = (pool: keyof SessionBinding, worker: number): boolean =>
    (pool === 'decode' ? this.decode : this.prefill).pool.isSelectable(worker);

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

  /** This request's mode and why (prefill/mode.ts): throws DisaggregationRequiredError when it may not be served. */
  private decide(ctx: RequestContext): ModeDecision {
    return chooseMode({
      prefillAvailable: this.active,
      decodeComputesPrompts: () => this.decodeComputesPrompts(),
      enforceDisagg: this.enforceDisagg,
      conditional: this.conditional,
      prefillPinned: ctx.req.hints.prefillWorkerId !== undefined,
      estimate: () => estimateModes(ctx, this.queues.prefill),
    });
  }

  /** The mode with conditional disaggregation left out. */
  private basicMode(): ModeDecision {
    return chooseMode({
      prefillAvailable: this.active,
      enforceDisagg: this.enforceDisagg,
      conditional: DEFAULT_CONDITIONAL_DISAGG,
      prefillPinned: false,
      decodeComputesPrompts: () => true,
      estimate: NO_ESTIMATE,
    });
  }

  /** No selectable decode worker is an SGLang decode worker (which serves only bootstrapped requests). */
  private decodeComputesPrompts(): boolean {
    const pool = this.decode.pool;
    for (const id of pool.selectable()) {
      const w = pool.get(id);
      if (w && w.kind === 'sglang' && w.role === 'decode') return false;
    }
    return true;
  }

  /** A queue needs the pools' load: refuses a threshold over a core that does not report it. */
  private checkQueueLoad(s: QueueSettings): void {
    if (s.threshold === null) return;
    for (const r of [this.prefill, this.decode]) {
      if (typeof r.core.load !== 'function') throw new TypeError(`a router queue needs the load of pool '${r.pool.name}': its core has no load()`);
    }
  }

  /**
   * Fails fast, before any prefill work, when no decode worker could take the request: a prefill
   * whose decode never comes would strand its KV blocks on the prefill worker.
   */
  private checkDecodeAvailable(ctx: RequestContext): void {
    const pin = ctx.req.hints.workerId;
    if (this.decode.pool.selectableCount === 0 || (pin !== undefined && !this.decode.pool.isSelectable(pin))) {
      this.decode.query(ctx.req.tokens, ctx.decodeLeg()); // throws the core's own refusal
    }
  }

  /** Peeks the prefill worker, checks it can be used, then books it (advancing any rotation). */
  private bookPrefill(ctx: RequestContext): Booking {
    const { req } = ctx;
    this.requirePrefillHint(req.hints);
    const leg: LegRoute = ctx.prefillLeg();
    const peek = this.prefill.query(req.tokens, leg);
    const worker = this.prefill.pool.get(peek.worker);
    if (worker?.kind === 'sglang' && (worker.bootstrapHost === undefined || worker.bootstrapPort === undefined)) {
      throw new PrefillUnusableError(`SGLang prefill worker ${worker.id} has no bootstrap host and port configured`);
    }
    // Round robin books the peeked worker by itself (nothing ran in between); other policies are
    // pinned to it so that random tie-breaks cannot choose differently.
    const pinned = this.prefill.policy === 'round_robin' ? leg : withFields(leg, { pinnedWorker: peek.worker, pinnedDpRank: peek.dpRank });
    // A failover keeps to the engine kind of the chosen worker (the handoff path depends on it).
    return this.prefill.book(
      req.tokens,
      pinned,
      ctx.bookOptions('prefill', leg, (w) => w.kind === worker?.kind && (w.kind !== 'sglang' || w.bootstrapHost !== undefined)),
    );
  }

  private requirePrefillHint(hints: RoutingHints): void {
    if (this.prefill.policy === 'direct' && hints.prefillWorkerId === undefined) {
      throw new MissingRoutingHintError('direct prefill routing needs the prefill worker: send the x-prefill-instance-id header (or nvext.prefill_worker_id)');
    }
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
