// Passive ejection of failing workers (outlier detection, Envoy's model): the outcomes of the legs
// sent to a worker are counted, and a run of consecutive connect failures (the engine never got
// the request) or of consecutive 5xx answers takes the worker out of selection at once, without
// waiting for the next health round. The n-th ejection in a row lasts n times the base ejection
// time (capped), so a worker that keeps failing stays out longer; a successful answer ends the
// run. No more than a set percentage of a pool is ejected at once, so a bad network cannot empty
// the fleet. Pure state: time is passed in; WorkerPool applies the verdicts to selection.
import { describe, expectInteger } from '../util/validate.js';

export type EjectionReason = 'connect_failure' | 'server_error';

/** What one leg's attempt said about its worker. */
export type LegOutcome = 'answered' | EjectionReason;

export interface OutlierDetectionOptions {
  /** Consecutive connect failures that eject a worker; 0 never ejects for them. Default 1. */
  consecutiveConnectFailures?: number;
  /** Consecutive 5xx answers that eject a worker; 0 never ejects for them. Default 5. */
  consecutive5xx?: number;
  /** The first ejection's length; the n-th in a row lasts n times this. Default 30 s. */
  baseEjectionTimeMs?: number;
  /** The longest ejection. Default 300 s. */
  maxEjectionTimeMs?: number;
  /** At most this percentage of a pool's workers are ejected at once. Default 50. */
  maxEjectionPercent?: number;
}

export interface OutlierStatus {
  /** Ejected until this time (the clock's ms); absent when in selection. */
  ejectedUntil?: number;
  /** Ejections since the worker joined. */
  ejections: number;
  lastEjectionReason?: EjectionReason;
}

/** What recording an outcome did. */
export type OutlierVerdict =
  | { kind: 'none' }
  | { kind: 'ejected'; reason: EjectionReason; untilMs: number; durationMs: number; ejections: number }
  /** The run reached the threshold, but ejecting would pass the pool's max ejection percent. */
  | { kind: 'capped'; reason: EjectionReason };

interface Entry {
  connectFailures: number;
  serverErrors: number;
  /** Ejections in the current failing run (the length multiplier); a success ends the run. */
  run: number;
  ejections: number;
  ejectedUntil: number | undefined;
  lastReason: EjectionReason | undefined;
}

const NONE: OutlierVerdict = { kind: 'none' };

export class OutlierDetection {
  readonly consecutiveConnectFailures: number;
  readonly consecutive5xx: number;
  readonly baseEjectionTimeMs: number;
  readonly maxEjectionTimeMs: number;
  readonly maxEjectionPercent: number;
  private readonly entries = new Map<number, Entry>();
  private ejectedCount = 0;
  /** The earliest end of an ejection (Infinity when none): expiry is checked against one number. */
  private nextExpiry = Infinity;

  constructor(o: OutlierDetectionOptions = {}) {
    if (o === null || typeof o !== 'object') throw new TypeError(`outlier detection options must be an object, got ${describe(o)}`);
    this.consecutiveConnectFailures =
      o.consecutiveConnectFailures === undefined ? 1 : expectInteger(o.consecutiveConnectFailures, 'consecutiveConnectFailures', 0, 1_000_000);
    this.consecutive5xx = o.consecutive5xx === undefined ? 5 : expectInteger(o.consecutive5xx, 'consecutive5xx', 0, 1_000_000);
    this.baseEjectionTimeMs = o.baseEjectionTimeMs === undefined ? 30_000 : expectInteger(o.baseEjectionTimeMs, 'baseEjectionTimeMs', 1, 86_400_000);
    this.maxEjectionTimeMs = o.maxEjectionTimeMs === undefined ? 300_000 : expectInteger(o.maxEjectionTimeMs, 'maxEjectionTimeMs', 1, 86_400_000);
    this.maxEjectionPercent = o.maxEjectionPercent === undefined ? 50 : expectInteger(o.maxEjectionPercent, 'maxEjectionPercent', 0, 100);
    if (this.maxEjectionTimeMs < this.baseEjectionTimeMs) {
      throw new RangeError(`maxEjectionTimeMs (${this.maxEjectionTimeMs}) must be at least baseEjectionTimeMs (${this.baseEjectionTimeMs})`);
    }
  }

  add(worker: number): void {
    if (!this.entries.has(worker))
      this.entries.set(worker, { connectFailures: 0, serverErrors: 0, run: 0, ejections: 0, ejectedUntil: undefined, lastReason: undefined });
  }

  remove(worker: number): void {
    const e = this.entries.get(worker);
    if (e?.ejectedUntil !== undefined) this.ejectedCount--;
    this.entries.delete(worker);
  }

  /** Counts one outcome of `worker`, in a pool of `poolSize` workers; says whether it was ejected. */
  record(worker: number, outcome: LegOutcome, nowMs: number, poolSize: number): OutlierVerdict {
    const e = this.entries.get(worker);
    if (!e) return NONE;
    if (outcome === 'answered') {
      e.connectFailures = 0;
      e.serverErrors = 0;
      if (e.ejectedUntil === undefined) e.run = 0;
      return NONE;
    }
    if (e.ejectedUntil !== undefined) return NONE; // a leg sent before the ejection: already out
    let threshold: number;
    let count: number;
    if (outcome === 'connect_failure') {
      count = ++e.connectFailures;
      threshold = this.consecutiveConnectFailures;
    } else {
      count = ++e.serverErrors;
      threshold = this.consecutive5xx;
    }
    if (threshold === 0 || count < threshold) return NONE;
    if ((this.ejectedCount + 1) * 100 > this.maxEjectionPercent * poolSize) return { kind: 'capped', reason: outcome };
    e.run++;
    e.ejections++;
    e.lastReason = outcome;
    e.connectFailures = 0;
    e.serverErrors = 0;
    const durationMs = Math.min(this.baseEjectionTimeMs * e.run, this.maxEjectionTimeMs);
    e.ejectedUntil = nowMs + durationMs;
    this.ejectedCount++;
    if (e.ejectedUntil < this.nextExpiry) this.nextExpiry = e.ejectedUntil;
    return { kind: 'ejected', reason: outcome, untilMs: e.ejectedUntil, durationMs, ejections: e.ejections };
  }

  /** Whether some ejection may have ended by `nowMs` (one comparison: cheap on every routing). */
  due(nowMs: number): boolean {
    return nowMs >= this.nextExpiry;
  }

  /** Ends the ejections whose time ran out; returns their workers. */
  expire(nowMs: number): number[] {
    if (!this.due(nowMs)) return [];
    const back: number[] = [];
    let next = Infinity;
    for (const [worker, e] of this.entries) {
      if (e.ejectedUntil === undefined) continue;
      if (e.ejectedUntil <= nowMs) {
        this.lift(e);
        back.push(worker);
      } else if (e.ejectedUntil < next) next = e.ejectedUntil;
    }
    this.nextExpiry = next;
    return back;
  }

  /**
   * A health check of the worker passed. An ejection for connect failures ends (the worker is
   * listening again); one for 5xx answers does not, since /health does not see those. True when
   * an ejection ended.
   */
  healthCheckPassed(worker: number): boolean {
    const e = this.entries.get(worker);
    if (e?.ejectedUntil === undefined || e.lastReason !== 'connect_failure') return false;
    this.lift(e);
    return true;
  }

  isEjected(worker: number): boolean {
    return this.entries.get(worker)?.ejectedUntil !== undefined;
  }

  /** Workers ejected now (an expired ejection counts until expire() sees it). */
  get ejected(): number {
    return this.ejectedCount;
  }

  status(worker: number): OutlierStatus | undefined {
    const e = this.entries.get(worker);
    if (!e) return undefined;
    const s: OutlierStatus = { ejections: e.ejections };
    if (e.ejectedUntil !== undefined) s.ejectedUntil = e.ejectedUntil;
    if (e.lastReason !== undefined) s.lastEjectionReason = e.lastReason;
    return s;
  }

  /** Back in selection; the run goes on (the next ejection is longer) until an answer ends it. */
  private lift(e: Entry): void {
    e.ejectedUntil = undefined;
    e.connectFailures = 0;
    e.serverErrors = 0;
    this.ejectedCount--;
  }
}
