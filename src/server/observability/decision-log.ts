// The latest routing decisions, for the live page (/dashboard): one fixed ring of the legs booked
// and one of the requests that finished, joined by request id only when read. Recording writes one
// slot and bumps a counter: the decision is the object routing made anyway, nothing is copied.
import type { RoutingDecision } from '../../core/routing-core.js';

export interface LegRecord {
  /** Date.now() when the leg was booked. */
  at: number;
  pool: string;
  decision: RoutingDecision;
}

export interface DoneRecord {
  at: number;
  requestId: string;
  mode: string;
  reason: string;
  /** How its booking ended: end, error, abort, ... */
  outcome: string;
  ttftMs?: number;
  outputTokens: number;
}

/** One request's legs (newest request first) and, once it finished, how. */
export interface RecentRequest {
  requestId: string;
  at: number;
  legs: LegRecord[];
  done?: DoneRecord;
}

/** A fixed number of slots, the oldest overwritten. */
class Ring<T> {
  private readonly slots: Array<T | undefined>;
  private written = 0;

  constructor(readonly capacity: number) {
    this.slots = new Array<T | undefined>(capacity);
  }

  push(v: T): void {
    this.slots[this.written % this.capacity] = v;
    this.written++;
  }

  newestFirst(): T[] {
    const n = Math.min(this.written, this.capacity);
    const out: T[] = new Array<T>(n);
    for (let i = 0; i < n; i++) out[i] = this.slots[(this.written - 1 - i) % this.capacity] as T;
    return out;
  }
}

export class DecisionLog {
  private readonly legs: Ring<LegRecord>;
  private readonly finished: Ring<DoneRecord>;

  /** Keeps the last `capacity` legs and as many finished requests. */
  constructor(readonly capacity = 64) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 100_000)
      throw new RangeError(`capacity must be an integer from 1 to 100000, got ${capacity}`);
    this.legs = new Ring(capacity);
    this.finished = new Ring(capacity);
  }

  leg(pool: string, decision: RoutingDecision, at = Date.now()): void {
    this.legs.push({ at, pool, decision });
  }

  done(record: DoneRecord): void {
    this.finished.push(record);
  }

  /** The latest requests with their legs, newest first, at most `limit`. */
  recent(limit: number): RecentRequest[] {
    const byId = new Map<string, RecentRequest>();
    for (const leg of this.legs.newestFirst()) {
      const id = leg.decision.requestId;
      let r = byId.get(id);
      if (r === undefined) {
        if (byId.size === limit) continue;
        r = { requestId: id, at: leg.at, legs: [] };
        byId.set(id, r);
      }
      // Read newest first: the earlier leg (a prefill before its decode) goes in front.
      r.legs.unshift(leg);
    }
    for (const d of this.finished.newestFirst()) {
      const r = byId.get(d.requestId);
      if (r && r.done === undefined) r.done = d;
    }
    return [...byId.values()];
  }
}
