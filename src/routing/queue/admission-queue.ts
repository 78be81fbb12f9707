// The router queue of one pool (Dynamo's router_queue_threshold): while every eligible worker of
// the pool has more booked (queued, uncached) prefill tokens than `threshold` x its
// max_num_batched_tokens, a request waits here instead of piling onto an engine, and leaves in
// the order of the queue policy (queue-order.ts) as soon as one of its workers drops under the
// threshold. Its turn comes synchronously: `start()` books it in the same tick, so the next
// request in line sees that load. While requests wait, new ones queue behind them (no bypass).
//
// Bounds: at most maxRequests requests and maxTokens uncached tokens wait; a request beyond them
// is refused (QueueFullError: 429 with Retry-After), unless it ranks before the worst waiting
// request, which then gives up its place. A request whose client leaves is taken out at once:
// nothing was booked for it. Time is the router's clock (virtual in replay), never the wall's.
//
// Deadline (maxWaitMs, off by default): under overload a request that waits long is one that
// will be late anyway, and serving it late costs the requests behind it their turn. So a request
// is refused at arrival when the queue's own estimate of its wait (the uncached tokens ranked
// before it over the recent drain rate) is past maxWaitMs, and a waiting request that has waited
// maxWaitMs leaves with 429 and Retry-After instead of being served late. This also bounds how
// long wspt can hold a long prompt behind a stream of short ones: it is told to retry, not starved.
// One timer per queue, set for the oldest waiting request's deadline, gives the queue a turn then:
// without it a stalled pool (no first token, no arrival) would hold an expired request for good.
import { BackpressureError } from '../../core/routing-errors.js';
import { abortError } from '../../engines/errors.js';
import type { SignalLike } from '../../util/cancellation.js';
import { copyFields } from '../../util/objects.js';
import { realTimers, type Timers } from '../../util/timers.js';
import { describe, expectInteger } from '../../util/validate.js';
import { IndexedHeap } from './indexed-heap.js';
import { isQueuePolicy, leavesBefore, type QueueKey, type QueuePolicy, scoreOf, scoreUsesOverlap } from './queue-order.js';

export interface QueueSettings {
  /** Queue while every eligible worker's booked prefill tokens exceed this multiple of its max_num_batched_tokens; null: never queue. */
  threshold: number | null;
  policy: QueuePolicy;
  /** Requests waiting at most, per pool. */
  maxRequests: number;
  /** Uncached prompt tokens waiting at most, per pool. */
  maxTokens: number;
  /** A worker's max_num_batched_tokens when it declares none. */
  maxNumBatchedTokens: number;
  /** Longest wait in the router (ms): refused at arrival when the estimated wait is longer, shed once waited; null: no limit. */
  maxWaitMs: number | null;
}

export const DEFAULT_QUEUE_SETTINGS: Readonly<QueueSettings> = Object.freeze({
  threshold: null,
  policy: 'fcfs',
  maxRequests: 10_000,
  maxTokens: 100_000_000,
  maxNumBatchedTokens: 8192,
  maxWaitMs: null,
});

/** What the queue reads of its pool: the selectable workers and their batch budgets. */
export interface QueuePool {
  selectable(): readonly number[];
  get(worker: number): { dpSize: number; maxNumBatchedTokens?: number } | undefined;
}

/** What the queue reads of its RoutingCore: booked prefill tokens per worker and rank. */
export interface QueueLoad {
  load(): ReadonlyArray<{ worker: number; dpRank: number; prefillTokens: number }>;
}

/** One request asking for its turn. */
export interface QueueTicket<T> {
  requestId: string;
  /** Strict class: higher leaves first. */
  priority: number;
  /** Seconds earlier it counts (fcfs, lcfs), extra weight (wspt). */
  priorityJump: number;
  /** Prompt tokens no eligible worker holds now: a query that books nothing (refreshed at dequeue). */
  uncachedTokens(): number;
  /** The one worker it may go to (a client or session pin). */
  pinnedWorker?: number;
  /** The client's: aborting takes the request out of the queue. */
  signal: SignalLike;
  /** Books the request; called once, synchronously, when its turn comes. */
  start(): T;
}

export type QueueRejection = 'queue_full_requests' | 'queue_full_tokens' | 'displaced' | 'wait_too_long' | 'expired';

export type QueueEvent =
  | { type: 'queued'; priority: number }
  | { type: 'dispatched'; priority: number; waitMs: number }
  | { type: 'rejected'; priority: number; reason: QueueRejection }
  | { type: 'dropped'; priority: number; waitMs: number };

export interface QueueStats {
  depth: number;
  /** Uncached tokens of the waiting requests (as estimated when each was last keyed). */
  tokens: number;
  /** Waiting requests per priority class, classes ascending. */
  byPriority: Array<{ priority: number; depth: number }>;
  /** How long the oldest waiting request has waited. */
  oldestWaitMs: number;
  queued: number;
  dispatched: number;
  dropped: number;
  rejected: Record<QueueRejection, number>;
}

/** The queue is full: 429 with Retry-After (a BackpressureError with its own code and reason). */
export class QueueFullError extends BackpressureError {
  override name = 'QueueFullError';
  constructor(
    readonly pool: string,
    readonly reason: QueueRejection,
    retryAfterMs: number,
  ) {
    super(`${QUEUE_FULL_MESSAGES[reason]} (pool '${pool}'): retry later`, retryAfterMs, 'queue_full');
  }
}

const QUEUE_FULL_MESSAGES: Record<QueueRejection, string> = {
  queue_full_requests: 'the router queue holds as many requests as it may',
  queue_full_tokens: 'the router queue holds as many prompt tokens as it may',
  displaced: 'the router queue is full and this request gave its place to one of higher rank',
  wait_too_long: "this request would wait in the router queue longer than the queue's maxWaitMs",
  expired: "this request waited in the router queue for the queue's maxWaitMs without its turn",
};

interface Waiting {
  key: QueueKey;
  arrivalMs: number;
  uncached: number;
  /** Pump round in which the key was last refreshed. */
  refreshed: number;
  bestAt: number;
  worstAt: number;
  oldestAt: number;
  ticket: QueueTicket<unknown>;
  resolve(v: unknown): void;
  reject(err: unknown): void;
  onAbort(): void;
}

const RATE_WINDOW = 64;
const MIN_RETRY_MS = 1000;
const MAX_RETRY_MS = 300_000;

export class AdmissionQueue {
  private s: QueueSettings;
  private readonly best = new IndexedHeap<Waiting>((a, b) => leavesBefore(a.key, b.key), { get: (w) => w.bestAt, set: (w, i) => void (w.bestAt = i) });
  private readonly worst = new IndexedHeap<Waiting>((a, b) => leavesBefore(b.key, a.key), { get: (w) => w.worstAt, set: (w, i) => void (w.worstAt = i) });
  // The earliest arrival first: the next to pass maxWaitMs.
  private readonly oldest = new IndexedHeap<Waiting>((a, b) => a.arrivalMs < b.arrivalMs || (a.arrivalMs === b.arrivalMs && a.key.seq < b.key.seq), {
    get: (w) => w.oldestAt,
    set: (w, i) => void (w.oldestAt = i),
  });
  private readonly perPriority = new Map<number, number>();
  private queuedTokens = 0;
  private seq = 0;
  private round = 0;
  private scheduled = false;
  private closedWith: Error | undefined;
  // The one expiry timer: when it is due (undefined: none set) and how to cancel it.
  private expiryAt: number | undefined;
  private cancelExpiry: (() => void) | undefined;
  // Tokens of recent dispatches and when: the drain rate behind Retry-After.
  private readonly drainTimes: number[] = [];
  private readonly drainTokens: number[] = [];
  private readonly counts = {
    queued: 0,
    dispatched: 0,
    dropped: 0,
    rejected: { queue_full_requests: 0, queue_full_tokens: 0, displaced: 0, wait_too_long: 0, expired: 0 } as Record<QueueRejection, number>,
  };

  constructor(
    readonly name: string,
    private readonly pool: QueuePool,
    private readonly core: QueueLoad,
    private readonly clock: () => number,
    settings: Partial<QueueSettings> = {},
    private readonly onEvent?: (ev: QueueEvent) => void,
    /** Timers on `clock` (virtual in replay): the wait limit's deadline. */
    private readonly timers: Timers = realTimers(clock),
  ) {
    this.s = checkQueueSettings(merged(DEFAULT_QUEUE_SETTINGS, settings));
  }

  get settings(): Readonly<QueueSettings> {
    return this.s;
  }

  get depth(): number {
    return this.best.size;
  }

  /** Uncached tokens waiting. */
  get tokens(): number {
    return this.queuedTokens;
  }

  /** Changes settings at runtime (checked whole first); waiting requests are reconsidered at once. */
  update(settings: Partial<QueueSettings>): QueueSettings {
    const next = checkQueueSettings(merged(this.s, settings));
    const rekey = next.policy !== this.s.policy;
    this.s = next;
    if (rekey) {
      for (const w of this.best.toArray())
        w.key.score = scoreOf(next.policy, { arrivalMs: w.arrivalMs, priorityJump: w.ticket.priorityJump, uncachedTokens: w.uncached });
      for (const w of this.best.toArray()) {
        this.best.update(w);
        this.worst.update(w);
      }
    }
    this.armExpiry();
    this.wake();
    return next;
  }

  /**
   * The request's turn: start() at once when no request waits and one of its workers is under
   * the threshold, else once it leaves the queue. Rejects with QueueFullError when the queue is
   * full, an AbortError when the client leaves while waiting, or what start() throws.
   */
  admit<T>(ticket: QueueTicket<T>): T | Promise<T> {
    if (this.closedWith) throw this.closedWith;
    if (this.s.threshold === null || (this.best.size === 0 && !this.busy(ticket.pinnedWorker))) return ticket.start();
    if (ticket.signal.aborted) throw abortError(ticket.signal);
    const now = this.clock();
    const uncached = clampTokens(ticket.uncachedTokens());
    const key: QueueKey = {
      priority: ticket.priority,
      score: scoreOf(this.s.policy, { arrivalMs: now, priorityJump: ticket.priorityJump, uncachedTokens: uncached }),
      seq: this.seq++,
    };
    const full = this.tooLong(key) ?? this.makeRoom(key, uncached);
    if (full) {
      this.counts.rejected[full]++;
      this.onEvent?.({ type: 'rejected', priority: ticket.priority, reason: full });
      throw new QueueFullError(this.name, full, this.retryAfterMs());
    }
    return new Promise<T>((resolve, reject) => {
      const w: Waiting = {
        key,
        arrivalMs: now,
        uncached,
        refreshed: 0,
        bestAt: -1,
        worstAt: -1,
        oldestAt: -1,
        ticket,
        resolve: resolve as (v: unknown) => void,
        reject,
        onAbort: () => {
          if (!this.take(w)) return;
          this.armExpiry();
          this.counts.dropped++;
          this.onEvent?.({ type: 'dropped', priority: ticket.priority, waitMs: this.clock() - w.arrivalMs });
          reject(abortError(ticket.signal));
        },
      };
      this.put(w);
      this.armExpiry();
      ticket.signal.addEventListener('abort', w.onAbort, { once: true });
      this.counts.queued++;
      this.onEvent?.({ type: 'queued', priority: ticket.priority });
      this.wake();
    });
  }

  /** Something freed capacity (a first token, a finished request, a worker came back): let waiting requests try. */
  wake(): void {
    if (this.scheduled || this.best.size === 0) return;
    this.scheduled = true;
    queueMicrotask(() => this.pump());
  }

  stats(): QueueStats {
    const now = this.clock();
    const oldest = this.oldest.peek()?.arrivalMs ?? now;
    return {
      depth: this.best.size,
      tokens: this.queuedTokens,
      byPriority: [...this.perPriority]
        .filter(([, n]) => n > 0)
        .sort(([a], [b]) => a - b)
        .map(([priority, depth]) => ({ priority, depth })),
      oldestWaitMs: now - oldest,
      queued: this.counts.queued,
      dispatched: this.counts.dispatched,
      dropped: this.counts.dropped,
      rejected: { ...this.counts.rejected },
    };
  }

  /** Refuses every waiting request with `err` (and any later one): shutdown. */
  close(err: Error): void {
    this.closedWith = err;
    for (let w = this.best.peek(); w; w = this.best.peek()) {
      this.take(w);
      w.reject(err);
    }
    this.armExpiry();
  }

  // ---- private ----

  /**
   * 'wait_too_long' when the queue's estimate of the newcomer's wait passes maxWaitMs: the
   * uncached tokens of the waiting requests that rank before it, at the recent drain rate. No
   * estimate (so no refusal) before the queue has seen a drain rate.
   */
  private tooLong(key: QueueKey): QueueRejection | undefined {
    const limit = this.s.maxWaitMs;
    if (limit === null) return undefined;
    const rate = this.drainRate();
    if (rate === undefined) return undefined;
    // A scan, O(waiting): with a wait limit the queue holds at most about maxWaitMs of drain.
    let ahead = 0;
    for (const w of this.best.values()) if (leavesBefore(w.key, key)) ahead += w.uncached;
    // Its own tokens are not counted: they are computed after its turn, not waited for.
    return ahead / rate > limit ? 'wait_too_long' : undefined;
  }

  /** Sheds the requests that have waited maxWaitMs (429: they would be served late). */
  private shedExpired(): void {
    const limit = this.s.maxWaitMs;
    if (limit === null) return;
    const now = this.clock();
    // The same sum as the timer's deadline, so a timer fired at it always finds the request due.
    for (let w = this.oldest.peek(); w && w.arrivalMs + limit <= now; w = this.oldest.peek()) {
      this.take(w);
      this.counts.rejected.expired++;
      this.onEvent?.({ type: 'rejected', priority: w.ticket.priority, reason: 'expired' });
      w.reject(new QueueFullError(this.name, 'expired', this.retryAfterMs()));
    }
  }

  /**
   * Sets the one timer at the oldest waiting request's deadline (re-set when that changes; none
   * while nobody waits, without a limit, or once closed). Its firing is a turn of the queue.
   */
  private armExpiry(): void {
    const limit = this.s.maxWaitMs;
    const oldest = limit === null || this.closedWith ? undefined : this.oldest.peek();
    const at = oldest && oldest.arrivalMs + limit!;
    if (at === this.expiryAt) return;
    this.cancelExpiry?.();
    this.expiryAt = at;
    this.cancelExpiry =
      at === undefined
        ? undefined
        : this.timers.at(at, () => {
            this.expiryAt = this.cancelExpiry = undefined;
            this.pump();
          });
  }

  /**
   * Makes room for a newcomer keyed `key` bringing `uncached` tokens: displaces waiting requests
   * that rank after it while the bounds would be passed. Returns why it cannot enter, or undefined.
   */
  private makeRoom(key: QueueKey, uncached: number): QueueRejection | undefined {
    const { maxRequests, maxTokens } = this.s;
    const fits = (requests: number, tokens: number) => requests < maxRequests && tokens + uncached <= maxTokens;
    if (fits(this.best.size, this.queuedTokens)) return undefined;
    const reason: QueueRejection = this.best.size >= maxRequests ? 'queue_full_requests' : 'queue_full_tokens';
    if (uncached > maxTokens) return 'queue_full_tokens';
    // Who would have to go: the worst first, as long as each ranks after the newcomer.
    const leaving: Waiting[] = [];
    let requests = this.best.size;
    let tokens = this.queuedTokens;
    while (!fits(requests, tokens)) {
      const w = this.worst.pop();
      if (!w) break;
      leaving.push(w);
      if (!leavesBefore(key, w.key)) break;
      requests--;
      tokens -= w.uncached;
    }
    for (const w of leaving) this.worst.push(w);
    if (!fits(requests, tokens)) return reason;
    for (const w of leaving) {
      this.take(w);
      this.counts.rejected.displaced++;
      this.onEvent?.({ type: 'rejected', priority: w.ticket.priority, reason: 'displaced' });
      w.reject(new QueueFullError(this.name, 'displaced', this.retryAfterMs()));
    }
    return undefined;
  }

  private put(w: Waiting): void {
    this.best.push(w);
    this.worst.push(w);
    this.oldest.push(w);
    this.queuedTokens += w.uncached;
    this.perPriority.set(w.key.priority, (this.perPriority.get(w.key.priority) ?? 0) + 1);
  }

  /** Takes `w` out of the queue; false when it was no longer there. */
  private take(w: Waiting): boolean {
    if (!this.best.remove(w)) return false;
    this.worst.remove(w);
    this.oldest.remove(w);
    this.queuedTokens -= w.uncached;
    this.perPriority.set(w.key.priority, this.perPriority.get(w.key.priority)! - 1);
    w.ticket.signal.removeEventListener('abort', w.onAbort);
    return true;
  }

  private pump(): void {
    this.scheduled = false;
    this.shedExpired();
    const round = ++this.round;
    const refresh = scoreUsesOverlap(this.s.policy);
    for (let top = this.best.peek(); top; top = this.best.peek()) {
      if (refresh && top.refreshed !== round) {
        // The overlap may have changed while it waited: re-key it, and let a better one go first.
        top.refreshed = round;
        this.rekey(top);
        if (this.best.peek() !== top) continue;
      }
      // Head of line: the first in order waits until one of its workers has room.
      if (this.busy(top.ticket.pinnedWorker)) break;
      this.take(top);
      this.dispatch(top);
    }
    this.armExpiry();
  }

  private rekey(w: Waiting): void {
    const uncached = clampTokens(w.ticket.uncachedTokens());
    this.queuedTokens += uncached - w.uncached;
    w.uncached = uncached;
    w.key.score = scoreOf(this.s.policy, { arrivalMs: w.arrivalMs, priorityJump: w.ticket.priorityJump, uncachedTokens: uncached });
    this.best.update(w);
    this.worst.update(w);
  }

  private dispatch(w: Waiting): void {
    const now = this.clock();
    this.recordDrain(now, w.uncached);
    this.counts.dispatched++;
    this.onEvent?.({ type: 'dispatched', priority: w.ticket.priority, waitMs: now - w.arrivalMs });
    let result: unknown;
    try {
      result = w.ticket.start();
    } catch (err) {
      w.reject(err);
      return;
    }
    w.resolve(result);
  }

  /** Whether every eligible worker is over the threshold (false when none is eligible: routing refuses then). */
  private busy(pinned: number | undefined): boolean {
    const threshold = this.s.threshold;
    if (threshold === null) return false;
    const selectable = this.pool.selectable();
    const eligible = pinned === undefined ? selectable : selectable.includes(pinned) ? [pinned] : [];
    if (eligible.length === 0) return false;
    const booked = new Map<number, number>();
    for (const l of this.core.load()) booked.set(l.worker * 65_536 + l.dpRank, l.prefillTokens);
    for (const worker of eligible) {
      const info = this.pool.get(worker);
      if (!info) continue;
      const limit = threshold * (info.maxNumBatchedTokens ?? this.s.maxNumBatchedTokens);
      for (let rank = 0; rank < info.dpSize; rank++) {
        if ((booked.get(worker * 65_536 + rank) ?? 0) <= limit) return false;
      }
    }
    return true;
  }

  private recordDrain(now: number, tokens: number): void {
    this.drainTimes.push(now);
    this.drainTokens.push(tokens);
    if (this.drainTimes.length > RATE_WINDOW) {
      this.drainTimes.shift();
      this.drainTokens.shift();
    }
  }

  /** Uncached tokens dispatched per ms lately (undefined until known). */
  private drainRate(): number | undefined {
    if (this.drainTimes.length < 2) return undefined;
    const span = this.clock() - this.drainTimes[0];
    let tokens = 0;
    for (const t of this.drainTokens) tokens += t;
    return span > 0 && tokens > 0 ? tokens / span : undefined;
  }

  /** How long until the waiting tokens have drained at the recent pace (1 s when unknown). */
  private retryAfterMs(): number {
    const rate = this.drainRate();
    if (rate === undefined) return MIN_RETRY_MS;
    return Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, Math.ceil(this.queuedTokens / rate)));
  }
}

/** `base` with the fields `over` sets (an undefined field keeps the base's). */
function merged(base: Readonly<QueueSettings>, over: Partial<QueueSettings>): QueueSettings {
  const out = copyFields(base) as QueueSettings;
  for (const [k, v] of Object.entries(over)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}

function clampTokens(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

/** Checks a whole settings object: TypeError/RangeError naming the field. */
export function checkQueueSettings(s: QueueSettings): QueueSettings {
  if (s.threshold !== null && (typeof s.threshold !== 'number' || !Number.isFinite(s.threshold) || s.threshold < 0)) {
    throw new RangeError(`queue threshold must be a finite number >= 0 or null (off), got ${describe(s.threshold)}`);
  }
  if (!isQueuePolicy(s.policy)) throw new RangeError(`queue policy must be one of fcfs, lcfs, wspt, got ${describe(s.policy)}`);
  expectInteger(s.maxRequests, 'queue maxRequests', 1, 10_000_000);
  expectInteger(s.maxTokens, 'queue maxTokens', 1, Number.MAX_SAFE_INTEGER);
  expectInteger(s.maxNumBatchedTokens, 'queue maxNumBatchedTokens', 1, 1 << 30);
  if (s.maxWaitMs !== null && (typeof s.maxWaitMs !== 'number' || !Number.isFinite(s.maxWaitMs) || s.maxWaitMs < 0)) {
    throw new RangeError(`queue maxWaitMs must be a finite number >= 0 or null (no limit), got ${describe(s.maxWaitMs)}`);
  }
  return {
    threshold: s.threshold,
    policy: s.policy,
    maxRequests: s.maxRequests,
    maxTokens: s.maxTokens,
    maxNumBatchedTokens: s.maxNumBatchedTokens,
    maxWaitMs: s.maxWaitMs,
  };
}
