// One request on its way through PrefillRouter: the request, its tracker, the two pools' routers,
// and the request-scoped steps every serving path shares (leg routes and options, usage, the
// response). The paths (aggregated.ts, sequential.ts, bootstrap.ts) take this context, never the
// router: PrefillRouter builds it, decides the mode, books the prefill and picks the path.
import type { ServeMode } from '../../core/vocabulary.js';
import type { SignalLike } from '../../util/cancellation.js';
import type { RoutingDecision } from '../../core/routing-core.js';
import type { SseEvent } from '../../engines/types.js';
import { type PromptTokensDetails, eventUsage, eventWithPromptTokensDetails, usageCounts, usageOf, type Usage } from '../../engines/usage.js';
import { carriesToken } from '../../engines/sse.js';
import type { Booking } from '../booking.js';
import { type FreeReason, MappedStream } from '../booking-guard.js';
import type { BookOptions, KvRouter, LegOptions, LegRoute } from '../kv-router.js';
import type { RoutingHints } from '../hints.js';
import type { WorkerInfo } from '../../engines/types.js';
import { type Phase, type PhaseRouting, RequestTracker, type TrackerSummary } from '../request-tracker.js';
import { type RoutedResponse, type RouterRequest, expectedOutputOf } from '../router-request.js';
import type { AdmissionQueue } from '../queue/admission-queue.js';
import type { SessionAffinity } from '../session-affinity.js';
import type { ModeReason } from './mode.js';
import { responseHeaders } from './response.js';

export interface RequestDone {
  summary: TrackerSummary;
  mode: ServeMode;
  /** Why that mode (x-kvroute-mode-reason). */
  reason: ModeReason;
  outcome: FreeReason;
}

/** What requests report to the router serving them (its counts and callbacks). */
export interface RequestReport {
  /** Booked aggregated (a fallback is counted by `fallback`). */
  aggregated(): void;
  /** The prefill failed and the request falls back to aggregated serving. */
  fallback(requestId: string, err: unknown): void;
  finishedAtPrefill(): void;
  /** The request's last leg finished. */
  done(ctx: RequestContext, mode: ServeMode, outcome: FreeReason): void;
}

/** What a request needs from the router serving it; one per router, shared by its requests. */
export interface RouterEnv {
  readonly prefill: KvRouter;
  readonly decode: KvRouter;
  readonly fallbackToAggregated: boolean;
  /** Forward a request's priority class to its engines (LegOptions.enginePriority). */
  readonly forwardPriority: boolean;
  /** Source of 63-bit random bootstrap room values. */
  readonly randomRoom: () => bigint;
  readonly sessions: SessionAffinity | undefined;
  /** The router queues of the two pools (off unless given a threshold). */
  readonly queues: { readonly prefill: AdmissionQueue; readonly decode: AdmissionQueue };
  readonly report: RequestReport;
}

export class RequestContext {
  readonly tracker: RequestTracker;
  /** The client asked for a stream. */
  readonly stream: boolean;
  /** Why the request is served in its mode (x-kvroute-mode-reason); set by the mode decision, `prefill_failed` by a fallback. */
  modeReason: ModeReason = 'unconditional';
  // The request is over once handle() settled and every leg that reports its end (legOptions) did.
  private openLegs = 0;
  private settled = false;
  private overFns: Array<() => void> = [];

  constructor(
    readonly env: RouterEnv,
    readonly req: RouterRequest,
    clock: () => number,
    /** The client's own hints; what req.hints has beyond them (a session's pins) is a preference a failover may drop. */
    readonly clientHints: RoutingHints = req.hints,
  ) {
    this.tracker = new RequestTracker(req.requestId, clock);
    this.stream = req.body.stream === true;
  }

  /**
   * How a leg of this request fails over (KvRouter.book): a worker the client pinned keeps the
   * leg (it does not move); a pin of its session is dropped for the retry. `accept` narrows the
   * workers a retry may take.
   */
  bookOptions(pool: 'prefill' | 'decode', leg: LegRoute, accept?: (w: WorkerInfo) => boolean): BookOptions {
    const pinned = pool === 'prefill' ? this.clientHints.prefillWorkerId : this.clientHints.workerId;
    const failover = pinned !== undefined || leg.pinnedWorker === undefined ? leg : withoutPin(leg);
    const trace = this.req.trace;
    return accept ? { failover, accept, trace } : { failover, trace };
  }

  get prefill(): KvRouter {
    return this.env.prefill;
  }

  get decode(): KvRouter {
    return this.env.decode;
  }

  /** The aggregated leg: the decode pool computes the prompt, so its cached blocks count. */
  aggregatedLeg(): LegRoute {
    const { req } = this;
    return {
      requestId: req.requestId,
      loraName: req.loraName,
      pinnedWorker: req.hints.workerId,
      pinnedDpRank: req.hints.dpRank,
      expectedOutputTokens: expectedOutputOf(req),
      enginePriority: this.routingPriority,
    };
  }

  /** The prefill leg, where the client (or its session) pinned it. */
  prefillLeg(): LegRoute {
    const { req } = this;
    return {
      requestId: req.requestId,
      loraName: req.loraName,
      pinnedWorker: req.hints.prefillWorkerId,
      pinnedDpRank: req.hints.prefillDpRank,
      enginePriority: this.routingPriority,
    };
  }

  /** The decode leg of a disaggregated request: credit 0, no assumed KV reuse (the seeds' decode override). */
  decodeLeg(): LegRoute {
    const leg = this.aggregatedLeg();
    leg.overlapScoreCredit = 0;
    return leg;
  }

  /** The priority class its legs forward to their engines: the client's, when the router forwards priorities. */
  get enginePriority(): number | undefined {
    return this.env.forwardPriority ? this.req.hints.priority : undefined;
  }

  /** The class the routing core books the request under (routingPriority). */
  get routingPriority(): number | undefined {
    return routingPriority(this.env.forwardPriority, this.req.hints);
  }

  /**
   * Leg options that feed the tracker and report the request's end. `recordsUsage`: the leg's own
   * usage chunk is the request's (an aggregated leg, relayed without a relay() around it).
   */
  legOptions(mode: ServeMode, holdUntilFirstEvent: boolean, signal: SignalLike = this.req.signal, recordsUsage = false): LegOptions {
    this.openLegs++;
    return {
      requestId: this.req.requestId,
      signal,
      holdUntilFirstEvent,
      enginePriority: this.enginePriority,
      trace: this.req.trace,
      onEvent: (ev) => {
        if (carriesToken(ev)) this.tracker.recordTokens(1);
        if (recordsUsage) this.recordUsage(eventUsage(ev));
      },
      onFinish: (reason) => this.done(mode, reason),
      // A failover may have moved the leg: record the worker it went out on.
      onSent: (b) => this.recordRouting(mode === 'disaggregated' ? 'decode' : 'aggregated', b),
    };
  }

  recordRouting(phase: Phase, b: Booking): void {
    this.tracker.recordRouting(phase, routingOf(b.decision));
  }

  /** The engine's cache report of a JSON answer (or a usage object) feeds the request's hit rate. */
  recordUsage(usage: Usage | undefined): void {
    if (!usage) return;
    const c = usageCounts(usage);
    if (c.cachedTokens !== undefined) this.tracker.recordUsage(c.promptTokens, c.cachedTokens);
  }

  /** A JSON answer: its usage recorded, then the response. */
  answer(mode: ServeMode, prefill: Booking | undefined, decode: Booking | undefined, body: unknown): RoutedResponse {
    this.recordUsage(usageOf(body));
    return this.respond(mode, prefill, decode, { body });
  }

  /** The relayed stream: the prefill's cache details injected into the usage chunk, usage recorded. */
  relay(stream: AsyncIterator<SseEvent>, details: () => PromptTokensDetails | undefined | Promise<PromptTokensDetails | undefined>): AsyncIterable<SseEvent> {
    const withDetails = async (ev: SseEvent) => {
      const out = eventWithPromptTokensDetails(ev, await details());
      this.recordUsage(eventUsage(out));
      return out;
    };
    // Token events pass through synchronously: only the usage chunk waits for the details.
    return new MappedStream(stream, (ev) => (eventUsage(ev) ? withDetails(ev) : ev));
  }

  /** The response: the session bound to the workers that served it, the routing headers. */
  respond(
    mode: ServeMode,
    prefill: Booking | undefined,
    decode: Booking | undefined,
    payload: { stream?: AsyncIterable<SseEvent>; body?: unknown },
  ): RoutedResponse {
    const { req, env } = this;
    const sessionId = req.hints.sessionId;
    if (sessionId !== undefined && env.sessions) {
      const at = (b: Booking | undefined) => b && { worker: b.decision.worker, dpRank: b.decision.dpRank };
      env.sessions.bind(sessionId, { decode: at(decode), prefill: mode === 'disaggregated' ? at(prefill) : undefined });
    }
    const headers = responseHeaders(req, mode, this.modeReason, prefill?.decision, decode?.decision, payload.body, (w) => env.prefill.pool.get(w)?.dpSize);
    return { status: 200, headers, stream: payload.stream, body: payload.body };
  }

  done(mode: ServeMode, outcome: FreeReason): void {
    if (this.openLegs > 0) this.openLegs--;
    this.env.report.done(this, mode, outcome);
    this.maybeOver();
  }

  /** Runs `fn` once the request is over: handle() settled and its stream (or answer) ended, however. */
  whenOver(fn: () => void): void {
    this.overFns.push(fn);
  }

  /** handle() resolved or rejected: nothing more will be started for this request. */
  settle(): void {
    this.settled = true;
    this.maybeOver();
  }

  private maybeOver(): void {
    if (!this.settled || this.openLegs > 0 || this.overFns.length === 0) return;
    const fns = this.overFns;
    this.overFns = [];
    for (const fn of fns) fn();
  }
}

function withoutPin(leg: LegRoute): LegRoute {
  const route: LegRoute = { requestId: leg.requestId };
  for (const [k, v] of Object.entries(leg) as Array<[keyof LegRoute, unknown]>) {
    if (k !== 'pinnedWorker' && k !== 'pinnedDpRank' && v !== undefined) (route as Record<string, unknown>)[k] = v;
  }
  return route;
}

/** The tracker's view of a routing decision. */
export function routingOf(d: RoutingDecision): PhaseRouting {
  return { worker: d.worker, dpRank: d.dpRank, overlapBlocks: d.overlapBlocks, promptTokens: d.promptTokens, cachedTokens: d.cachedTokens };
}

/**
 * The class the engines schedule a request by, as the routing core books it (RouteRequest's
 * enginePriority): the client's (0 without one, as an engine takes a request without a priority)
 * when the router forwards priorities; undefined when the engines serve first come, first served.
 */
export function routingPriority(forwardPriority: boolean, hints: { priority?: number }): number | undefined {
  return forwardPriority ? (hints.priority ?? 0) : undefined;
}
