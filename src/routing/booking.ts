// A booking: the load one leg puts on its pool's RoutingCore, from the routing decision until the
// leg is over. The first token marks the worker's prefill work done; the BookingGuard frees the
// booking exactly once, whichever way the leg ends. A leg that fails before its engine accepted it
// moves to another worker (KvRouter's failover): the booking frees its old decision, then takes
// the new one, so a leg never holds two.
import type { PolicyName, RouteRequest, RoutingDecision } from '../core/routing-core.js';
import type { WorkerInfo } from '../engines/types.js';
import type { BookingGuard } from './booking-guard.js';

/** What booking needs from the pool's RoutingCore. */
export interface KvRouterCore {
  readonly config: { readonly blockSize: number; readonly policy?: PolicyName };
  route(tokens: Uint32Array, req: RouteRequest): RoutingDecision;
  query(tokens: Uint32Array, req: Omit<RouteRequest, 'requestId'> & { requestId?: string }): RoutingDecision;
  markPrefillCompleted(requestId: string): boolean;
  free(requestId: string): boolean;
  /** Output-block growth (output tracking); a core without it tracks no output. */
  addOutputTokens?(requestId: string, tokens: number): boolean;
  /** Booked load per worker and rank (the router queue's threshold test). */
  load?(): ReadonlyArray<{ worker: number; dpRank: number; prefillTokens: number }>;
}

/** How a booked leg may be routed again when its worker never got it (KvRouter's failover). */
export interface FailoverPlan {
  tokens: Uint32Array;
  /** The route of a retry: a pin kept here keeps the leg on its worker (no failover off it). */
  route: Omit<RouteRequest, 'allowedWorkers'>;
  /** Workers a retry may choose (default: every selectable one). */
  accept?: (w: WorkerInfo) => boolean;
  /** Workers this leg failed on, left out of its retries. */
  readonly failed: Set<number>;
}

/** A routed, booked leg. */
export class Booking {
  private prefillMarked = false;
  private current: { decision: RoutingDecision; worker: WorkerInfo; guard: BookingGuard };

  constructor(
    decision: RoutingDecision,
    worker: WorkerInfo,
    guard: BookingGuard,
    private readonly core: KvRouterCore,
    /** @internal how KvRouter routes the leg again when its worker never got it */
    readonly failover?: FailoverPlan,
    /** The worker's prefill queue got shorter (a router queue may have room now). */
    private readonly onPrefillDone?: () => void,
  ) {
    this.current = { decision, worker, guard };
  }

  get decision(): RoutingDecision {
    return this.current.decision;
  }

  get worker(): WorkerInfo {
    return this.current.worker;
  }

  get guard(): BookingGuard {
    return this.current.guard;
  }

  get requestId(): string {
    return this.current.decision.requestId;
  }

  /** The first token arrived: the worker's prefill work for this request is done. */
  firstToken(): void {
    if (this.prefillMarked || this.guard.freed) return;
    this.prefillMarked = true;
    this.core.markPrefillCompleted(this.decision.requestId);
    this.onPrefillDone?.();
  }

  /** `count` more generated tokens: the booking grows into its output blocks (output tracking). */
  outputTokens(count: number): void {
    if (count <= 0 || this.guard.freed) return;
    this.core.addOutputTokens?.(this.decision.requestId, count);
  }

  /** @internal KvRouter's failover: the old decision is freed, this is the new one. */
  moveTo(decision: RoutingDecision, worker: WorkerInfo, guard: BookingGuard): void {
    if (!this.current.guard.freed) throw new Error('internal: a booking moves only once its old decision is freed');
    this.current = { decision, worker, guard };
    this.prefillMarked = false;
  }
}
