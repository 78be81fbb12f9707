// A booking: the load one leg puts on its pool's RoutingCore, from the routing decision until the
// leg is over. The first token marks the worker's prefill work done; the BookingGuard frees the
// booking exactly once, whichever way the leg ends.
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

/** A routed, booked leg. */
export class Booking {
  private prefillMarked = false;

  constructor(
    readonly decision: RoutingDecision,
    readonly worker: WorkerInfo,
    readonly guard: BookingGuard,
    private readonly core: KvRouterCore,
    /** The worker's prefill queue got shorter (a router queue may have room now). */
    private readonly onPrefillDone?: () => void,
  ) {}

  get requestId(): string {
    return this.decision.requestId;
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
}
