// Session affinity (PROTOCOLS.md section 4): requests carrying the same session id go to the
// workers the session's earlier requests went to, while those workers can serve; a
// conversation's next turn then finds its prefix in the same KV cache even when the router's own
// cost would pick elsewhere. Bindings are bounded in number (the least recently used go first)
// and in time (a session idle for ttlMs is forgotten).
import { describe, expectInteger } from '../util/validate.js';

export interface BoundWorker {
  worker: number;
  dpRank: number;
}

/** Where a session's requests went: the decode (or aggregated) worker, and the prefill worker. */
export interface SessionBinding {
  decode?: BoundWorker;
  prefill?: BoundWorker;
}

export interface SessionAffinityOptions {
  /** A session unused this long is forgotten. Default 10 minutes. */
  ttlMs?: number;
  /** At most this many sessions are remembered (least recently used go first). Default 100,000. */
  maxSessions?: number;
  /** Milliseconds, for expiry (tests use a fake one). */
  clock?: () => number;
  /** Sees every binding bind() stores, once stored (router replicas share them). */
  onBind?: (sessionId: string, binding: SessionBinding) => void;
}

export interface SessionAffinityStats {
  sessions: number;
  /** Requests routed to their session's workers. */
  hits: number;
  /** Requests of sessions bound for the first time (or again after expiry). */
  bound: number;
  /** Requests whose session's worker could no longer serve: routed anew and bound again. */
  rebound: number;
  evicted: number;
  expired: number;
}

/** Whether a bound worker of a pool can take requests now. */
export type CanServe = (pool: keyof SessionBinding, worker: number) => boolean;

function usable(b: SessionBinding, canServe: CanServe): SessionBinding {
  return {
    decode: b.decode && canServe('decode', b.decode.worker) ? b.decode : undefined,
    prefill: b.prefill && canServe('prefill', b.prefill.worker) ? b.prefill : undefined,
  };
}

interface Entry {
  binding: SessionBinding;
  expiresAt: number;
}

const DAY_MS = 86_400_000;

export class SessionAffinity {
  readonly ttlMs: number;
  readonly maxSessions: number;
  private readonly clock: () => number;
  private readonly onBind?: (sessionId: string, binding: SessionBinding) => void;
  /** Insertion order is recency order: a touched session moves to the end. */
  private readonly entries = new Map<string, Entry>();
  private readonly counts = { hits: 0, bound: 0, rebound: 0, evicted: 0, expired: 0 };

  constructor(o: SessionAffinityOptions = {}) {
    if (o === null || typeof o !== 'object') throw new TypeError(`session affinity options must be an object, got ${describe(o)}`);
    this.ttlMs = o.ttlMs === undefined ? 600_000 : expectInteger(o.ttlMs, 'ttlMs', 1, DAY_MS);
    this.maxSessions = o.maxSessions === undefined ? 100_000 : expectInteger(o.maxSessions, 'maxSessions', 1, 10_000_000);
    if (o.clock !== undefined && typeof o.clock !== 'function') throw new TypeError(`clock must be a function, got ${describe(o.clock)}`);
    this.clock = o.clock ?? Date.now;
    if (o.onBind !== undefined && typeof o.onBind !== 'function') throw new TypeError(`onBind must be a function, got ${describe(o.onBind)}`);
    this.onBind = o.onBind;
  }

  /**
   * The session's live binding, without counting or refreshing it (explanations); with
   * `canServe`, only the bound workers it accepts.
   */
  peek(sessionId: string, canServe?: CanServe): SessionBinding | undefined {
    const e = this.entries.get(sessionId);
    if (!e || e.expiresAt <= this.clock()) return undefined;
    return canServe ? usable(e.binding, canServe) : e.binding;
  }

  /**
   * The binding to route a request of `sessionId` with: the bound workers `canServe` accepts
   * (the others are left for routing to choose anew). Counts the request as a hit, or as
   * (re)bound when some bound worker could not serve or nothing was bound.
   */
  resolve(sessionId: string, canServe: CanServe): SessionBinding {
    const binding = this.peek(sessionId);
    if (!binding) {
      this.counts.bound++;
      return {};
    }
    const ok = usable(binding, canServe);
    if (ok.decode === binding.decode && ok.prefill === binding.prefill) this.counts.hits++;
    else this.counts.rebound++;
    return ok;
  }

  /** Binds the session to where its request went (a missing pool keeps its earlier binding). */
  bind(sessionId: string, to: SessionBinding): void {
    const binding = this.store(sessionId, to);
    this.onBind?.(sessionId, binding);
  }

  /**
   * A binding learnt elsewhere (another router replica bound the session): stored as bind()
   * would, without counting anything or calling onBind.
   */
  adopt(sessionId: string, to: SessionBinding): void {
    if (typeof sessionId !== 'string' || sessionId === '') throw new TypeError(`sessionId must be a non-empty string, got ${describe(sessionId)}`);
    this.store(sessionId, to);
  }

  private store(sessionId: string, to: SessionBinding): SessionBinding {
    const now = this.clock();
    const old = this.entries.get(sessionId);
    this.entries.delete(sessionId);
    const previous = old && old.expiresAt > now ? old.binding : undefined;
    const binding = { decode: to.decode ?? previous?.decode, prefill: to.prefill ?? previous?.prefill };
    this.entries.set(sessionId, { binding, expiresAt: now + this.ttlMs });
    this.trim(now);
    return binding;
  }

  stats(): SessionAffinityStats {
    return { sessions: this.entries.size, ...this.counts };
  }

  /** Drops expired sessions from the old end, then the least recently used beyond the cap. */
  private trim(now: number): void {
    for (const [id, e] of this.entries) {
      if (e.expiresAt > now) break; // later entries were touched later: none of them expired
      this.entries.delete(id);
      this.counts.expired++;
    }
    while (this.entries.size > this.maxSessions) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
      this.counts.evicted++;
    }
  }
}
