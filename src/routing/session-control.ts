// Dynamo's session_control: a request may open an engine session (SGLang's open_session: the
// engine keeps the conversation's KV for the session's later turns), take a turn in one, or close
// it. The router pins a session to the decode (or aggregated) worker it was opened on, calls the
// engine's session API through the leg transport, and closes a session only once the closing
// request's own stream is over, however it ends (finished, failed, client gone, abandoned).
//
// Never leaking an open session: every session opened is closed by a close request, by its idle
// timeout (the router closes it on the engine when it next looks), or when the router closes.
// A session whose open call failed was never bound.
import type { WorkerInfo } from '../engines/types.js';
import type { SessionCall } from '../engines/transport.js';
import { BackpressureError } from '../core/routing-errors.js';
import { InvalidRoutingHintError } from './errors.js';
import type { RoutingHints } from './hints.js';
import type { RouterRequest } from './router-request.js';
import { withFields } from '../util/objects.js';

export interface SessionControlOptions {
  /** Sessions open at once at most; beyond, an open is refused (429). Default 100,000. */
  maxSessions?: number;
  /** Idle seconds before a session without its own timeout is closed. Default 3600. */
  defaultTimeoutS?: number;
}

export interface SessionControlStats {
  open: number;
  opened: number;
  closed: number;
  expired: number;
  /** Close calls the engine refused or never answered (the session is forgotten all the same). */
  closeFailures: number;
}

interface OpenSession {
  worker: WorkerInfo;
  dpRank: number;
  timeoutMs: number;
  usedAt: number;
  closing: boolean;
}

/** What the session layer needs of the router: where a session would go, and the engine call. */
export interface SessionHost {
  /** The decode worker (and rank) routing would choose for this request now; books nothing. */
  choose(req: RouterRequest): { worker: WorkerInfo; dpRank: number };
  call(call: SessionCall): Promise<void>;
  clock(): number;
}

/** The request's session turn: its hints with the session's pin, and what to run once it is over. */
export interface SessionTurn {
  hints: RoutingHints;
  /** Called once the request's own stream is over (or it failed before one): closes a closing session. */
  over?: () => void;
}

export class SessionControl {
  private readonly open = new Map<string, OpenSession>();
  private readonly maxSessions: number;
  private readonly defaultTimeoutMs: number;
  private readonly counts = { opened: 0, closed: 0, expired: 0, closeFailures: 0 };
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly host: SessionHost,
    o: SessionControlOptions = {},
  ) {
    this.maxSessions = o.maxSessions ?? 100_000;
    this.defaultTimeoutMs = (o.defaultTimeoutS ?? 3600) * 1000;
  }

  /** Resolves the request's session_control hint before it is routed; InvalidRoutingHintError (400) for a session in the wrong state. */
  async begin(req: RouterRequest): Promise<SessionTurn> {
    const sc = req.hints.sessionControl!;
    this.expire();
    const now = this.host.clock();
    const known = this.open.get(sc.sessionId);
    if (sc.action === 'open') {
      if (known) throw new InvalidRoutingHintError(`session '${sc.sessionId}' is already open`);
      if (this.open.size >= this.maxSessions) throw new BackpressureError(`${this.maxSessions} sessions are open: close one first`, 1000, 'too_many_sessions');
      const { worker, dpRank } = this.host.choose(req);
      // Bound only once the engine opened it: a failed open leaves nothing to close.
      await this.host.call({ worker, action: 'open', sessionId: sc.sessionId, timeoutS: sc.timeoutS, requestId: req.requestId });
      if (this.open.has(sc.sessionId)) {
        // Another request opened the same id meanwhile: this one's engine session goes again.
        this.closeOnEngine(worker, sc.sessionId, req.requestId);
        throw new InvalidRoutingHintError(`session '${sc.sessionId}' is already open`);
      }
      this.open.set(sc.sessionId, {
        worker,
        dpRank,
        timeoutMs: sc.timeoutS === undefined ? this.defaultTimeoutMs : sc.timeoutS * 1000,
        usedAt: now,
        closing: false,
      });
      this.counts.opened++;
      return { hints: pinnedTo(req.hints, worker.id, dpRank) };
    }
    if (!known || known.closing) throw new InvalidRoutingHintError(`session '${sc.sessionId}' is not open`);
    known.usedAt = now;
    const hints = pinnedTo(req.hints, known.worker.id, known.dpRank);
    if (sc.action !== 'close') return { hints };
    known.closing = true;
    return {
      hints,
      over: () => {
        if (this.open.get(sc.sessionId) !== known) return;
        this.open.delete(sc.sessionId);
        this.counts.closed++;
        this.closeOnEngine(known.worker, sc.sessionId, req.requestId);
      },
    };
  }

  /** The hints with an open session's pin (for a query: nothing opened, closed or refreshed). */
  peek(hints: RoutingHints): RoutingHints {
    const id = hints.sessionControl?.sessionId;
    const known = id === undefined ? undefined : this.open.get(id);
    return known ? pinnedTo(hints, known.worker.id, known.dpRank) : hints;
  }

  stats(): SessionControlStats {
    return {
      open: this.open.size,
      opened: this.counts.opened,
      closed: this.counts.closed,
      expired: this.counts.expired,
      closeFailures: this.counts.closeFailures,
    };
  }

  /** Closes every open session on its engine (the router is closing); resolves when the calls settled. */
  async closeAll(): Promise<void> {
    for (const [id, s] of this.open) {
      this.open.delete(id);
      this.counts.closed++;
      this.closeOnEngine(s.worker, id, `close-${id}`);
    }
    await this.idle();
  }

  /** Resolves once no close call is in flight. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  private expire(): void {
    const now = this.host.clock();
    for (const [id, s] of this.open) {
      if (s.closing || now - s.usedAt <= s.timeoutMs) continue;
      this.open.delete(id);
      this.counts.expired++;
      this.closeOnEngine(s.worker, id, `expire-${id}`);
    }
  }

  private closeOnEngine(worker: WorkerInfo, sessionId: string, requestId: string): void {
    const p = this.host.call({ worker, action: 'close', sessionId, requestId }).then(
      () => {},
      () => void this.counts.closeFailures++,
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }
}

function pinnedTo(hints: RoutingHints, worker: number, dpRank: number): RoutingHints {
  return hints.workerId === worker && hints.dpRank === dpRank ? hints : withFields(hints, { workerId: worker, dpRank });
}
