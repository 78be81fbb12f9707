// The workers of one routing pool (prefill, or decode and aggregated) with their selection state:
// a worker is selectable when it is healthy, not draining and not ejected. The pool keeps its
// RoutingCore's worker set equal to its own (add/remove) and gives the router the allowed-worker
// filter that leaves unhealthy, draining and ejected workers out of selection while their requests
// in flight finish. Ejection (outlier detection, outlier-detection.ts) follows the outcomes of the
// legs the router sends: on when the pool is given its options.
import { parseBaseUrl } from '../engines/base-url.js';
import { ENGINE_KINDS, WORKER_ROLES, type WorkerInfo, type WorkerRole } from '../engines/types.js';
import { describe, expectInteger, expectObject, expectWorkerId } from '../util/validate.js';
import { type EjectionReason, type LegOutcome, OutlierDetection, type OutlierDetectionOptions, type OutlierStatus } from './outlier-detection.js';

/** What the pool needs from its RoutingCore. */
export interface PoolCore {
  addWorker(spec: { worker: number; dpSize?: number; kvCapacityBlocks?: number }): void;
  removeWorker(worker: number): void;
  load(): ReadonlyArray<{ worker: number; requests: number }>;
}

export class UnknownPoolWorkerError extends RangeError {
  override name = 'UnknownPoolWorkerError';
  constructor(
    readonly pool: string,
    readonly worker: number,
  ) {
    super(`pool '${pool}' has no worker ${worker}`);
  }
}

interface Entry {
  info: WorkerInfo;
  healthy: boolean;
  draining: boolean;
  ejected: boolean;
}

export interface WorkerState {
  info: WorkerInfo;
  healthy: boolean;
  draining: boolean;
  /** Out of selection after consecutive failures (outlier detection), until `outlier.ejectedUntil`. */
  ejected: boolean;
  selectable: boolean;
  /** Ejection counts, when outlier detection is on. */
  outlier?: OutlierStatus;
}

/** A worker left selection after a run of failures. */
export interface EjectionEvent {
  pool: string;
  worker: number;
  reason: EjectionReason;
  /** Ejected until this time (the pool's clock, ms). */
  untilMs: number;
  durationMs: number;
  /** Ejections of the worker so far, this one included. */
  ejections: number;
}

/** An ejected worker came back: a health check passed, or its ejection time ran out. */
export interface ReturnEvent {
  pool: string;
  worker: number;
  why: 'health_check' | 'ejection_expired';
}

export interface WorkerPoolOptions {
  /** Passive ejection of failing workers; off when absent. */
  outlierDetection?: OutlierDetectionOptions;
  /** The clock of ejection times (ms). Default Date.now. */
  clock?: () => number;
  onEjection?(e: EjectionEvent): void;
  onReturn?(e: ReturnEvent): void;
  /** A run of failures reached the threshold, but ejecting would pass the max ejection percent. */
  onEjectionCapped?(e: { pool: string; worker: number; reason: EjectionReason }): void;
}

export class WorkerPool {
  private readonly entries = new Map<number, Entry>();
  private readonly listeners = new Set<() => void>();
  private selectableCache: number[] | undefined;
  private readonly roles: ReadonlySet<WorkerRole>;
  private readonly outliers: OutlierDetection | undefined;
  private readonly clock: () => number;
  private readonly events: WorkerPoolOptions;

  constructor(
    readonly name: string,
    private readonly core: PoolCore,
    roles: readonly WorkerRole[],
    o: WorkerPoolOptions = {},
  ) {
    if (!Array.isArray(roles) || roles.length === 0) throw new TypeError(`pool '${name}' needs at least one role`);
    for (const r of roles) if (!WORKER_ROLES.includes(r)) throw new TypeError(`role must be one of ${WORKER_ROLES.join(', ')}, got ${describe(r)}`);
    if (o === null || typeof o !== 'object') throw new TypeError(`pool options must be an object, got ${describe(o)}`);
    for (const k of ['clock', 'onEjection', 'onReturn', 'onEjectionCapped'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'function') throw new TypeError(`pool options.${k} must be a function, got ${describe(o[k])}`);
    }
    this.roles = new Set(roles);
    this.outliers = o.outlierDetection === undefined ? undefined : new OutlierDetection(o.outlierDetection);
    this.clock = o.clock ?? Date.now;
    this.events = o;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Adds a worker (healthy, not draining) to the pool and its RoutingCore. */
  add(info: WorkerInfo): void {
    const w = validateWorkerInfo(info);
    if (!this.roles.has(w.role)) throw new RangeError(`pool '${this.name}' takes ${[...this.roles].join(' or ')} workers, got a ${w.role} worker (${w.id})`);
    if (this.entries.has(w.id)) throw new RangeError(`pool '${this.name}' already has worker ${w.id}`);
    this.core.addWorker({ worker: w.id, dpSize: w.dpSize, kvCapacityBlocks: w.kvCapacityBlocks });
    this.entries.set(w.id, { info: w, healthy: true, draining: false, ejected: false });
    this.outliers?.add(w.id);
    this.changed();
  }

  /** Removes a worker from the pool and its RoutingCore; false when it was not there. */
  remove(id: number): boolean {
    if (!this.entries.delete(id)) return false;
    this.outliers?.remove(id);
    this.core.removeWorker(id);
    this.changed();
    return true;
  }

  get(id: number): WorkerInfo | undefined {
    return this.entries.get(id)?.info;
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  workers(): WorkerInfo[] {
    return [...this.entries.values()].map((e) => e.info);
  }

  state(id: number): WorkerState {
    this.liftExpired();
    const e = this.entry(id);
    const s: WorkerState = { info: e.info, healthy: e.healthy, draining: e.draining, ejected: e.ejected, selectable: e.healthy && !e.draining && !e.ejected };
    const outlier = this.outliers?.status(id);
    if (outlier) s.outlier = outlier;
    return s;
  }

  setHealthy(id: number, healthy: boolean): void {
    const e = this.entry(id);
    if (e.healthy === healthy) return;
    e.healthy = healthy;
    this.changed();
  }

  /** A draining worker takes no new requests; those in flight finish. */
  setDraining(id: number, draining: boolean): void {
    const e = this.entry(id);
    if (e.draining === draining) return;
    e.draining = draining;
    this.changed();
  }

  isSelectable(id: number): boolean {
    this.liftExpired();
    const e = this.entries.get(id);
    if (e === undefined) return false;
    return e.healthy && !e.draining && !e.ejected;
  }

  /** Ids of the selectable workers, ascending. */
  selectable(): readonly number[] {
    this.liftExpired();
    if (!this.selectableCache) {
      this.selectableCache = [...this.entries.values()]
        .filter((e) => e.healthy && !e.draining && !e.ejected)
        .map((e) => e.info.id)
        .sort((a, b) => a - b);
    }
    return this.selectableCache;
  }

  /**
   * What a leg's attempt said about its worker (the router reports every one): with outlier
   * detection on, a run of failures ejects the worker at once.
   */
  recordOutcome(id: number, outcome: LegOutcome): void {
    const o = this.outliers;
    if (!o) return;
    const e = this.entries.get(id);
    if (!e) return;
    const v = o.record(id, outcome, this.clock(), this.entries.size);
    if (v.kind === 'capped') this.events.onEjectionCapped?.({ pool: this.name, worker: id, reason: v.reason });
    if (v.kind !== 'ejected') return;
    e.ejected = true;
    this.changed();
    this.events.onEjection?.({ pool: this.name, worker: id, reason: v.reason, untilMs: v.untilMs, durationMs: v.durationMs, ejections: v.ejections });
  }

  /** A health check of the worker passed: an ejection for connect failures ends (outlier-detection.ts). */
  healthCheckPassed(id: number): void {
    const e = this.entries.get(id);
    if (!e?.ejected || !this.outliers?.healthCheckPassed(id)) return;
    e.ejected = false;
    this.changed();
    this.events.onReturn?.({ pool: this.name, worker: id, why: 'health_check' });
  }

  /** Workers ejected now. */
  get ejectedCount(): number {
    this.liftExpired();
    return this.outliers?.ejected ?? 0;
  }

  get selectableCount(): number {
    return this.selectable().length;
  }

  /** The allowed-worker filter for routing: undefined when every worker is selectable (no filter needed). */
  allowedWorkers(): readonly number[] | undefined {
    const s = this.selectable();
    return s.length === this.entries.size ? undefined : s;
  }

  /** Requests booked on the worker right now (drain progress). */
  activeRequests(id: number): number {
    let n = 0;
    for (const l of this.core.load()) if (l.worker === id) n += l.requests;
    return n;
  }

  /** Calls `fn` whenever the set of selectable workers may have changed; returns an unsubscribe. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private entry(id: number): Entry {
    const e = this.entries.get(id);
    if (!e) throw new UnknownPoolWorkerError(this.name, id);
    return e;
  }

  private changed(): void {
    this.selectableCache = undefined;
    for (const fn of this.listeners) fn();
  }

  /** Ejections whose time ran out end when the pool is next looked at (one comparison otherwise). */
  private liftExpired(): void {
    const o = this.outliers;
    if (!o || o.ejected === 0) return;
    const now = this.clock();
    if (!o.due(now)) return;
    const back = o.expire(now);
    if (back.length === 0) return;
    for (const id of back) {
      const e = this.entries.get(id);
      if (e) e.ejected = false;
    }
    this.changed();
    for (const id of back) this.events.onReturn?.({ pool: this.name, worker: id, why: 'ejection_expired' });
  }
}

/** Checks a WorkerInfo and returns a normalised copy (dpSize defaulted to 1). */
export function validateWorkerInfo(value: unknown): WorkerInfo {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`worker must be an object, got ${describe(value)}`);
  const o = expectObject(value, 'worker');
  const id = expectWorkerId(o.id, 'worker.id');
  const at = `worker ${id}`;
  if (typeof o.role !== 'string' || !WORKER_ROLES.includes(o.role as WorkerRole)) {
    throw new TypeError(`${at}: role must be one of ${WORKER_ROLES.join(', ')}, got ${describe(o.role)}`);
  }
  if (typeof o.kind !== 'string' || !ENGINE_KINDS.includes(o.kind as WorkerInfo['kind'])) {
    throw new TypeError(`${at}: kind must be one of ${ENGINE_KINDS.join(', ')}, got ${describe(o.kind)}`);
  }
  if (typeof o.baseUrl !== 'string') throw new TypeError(`${at}: baseUrl must be a string, got ${describe(o.baseUrl)}`);
  parseBaseUrl(o.baseUrl);
  const dpSize = o.dpSize === undefined ? 1 : expectInteger(o.dpSize, `${at}: dpSize`, 1, 0x10000);
  const info: WorkerInfo = { id, role: o.role as WorkerRole, kind: o.kind as WorkerInfo['kind'], baseUrl: o.baseUrl, dpSize };
  if (o.kvCapacityBlocks !== undefined) info.kvCapacityBlocks = expectInteger(o.kvCapacityBlocks, `${at}: kvCapacityBlocks`, 1, Number.MAX_SAFE_INTEGER);
  const hasHost = o.bootstrapHost !== undefined;
  const hasPort = o.bootstrapPort !== undefined;
  if (hasHost !== hasPort) throw new TypeError(`${at}: bootstrapHost and bootstrapPort go together`);
  if (hasHost) {
    if (typeof o.bootstrapHost !== 'string' || o.bootstrapHost === '')
      throw new TypeError(`${at}: bootstrapHost must be a non-empty string, got ${describe(o.bootstrapHost)}`);
    info.bootstrapHost = o.bootstrapHost;
    info.bootstrapPort = expectInteger(o.bootstrapPort, `${at}: bootstrapPort`, 1, 65535);
  }
  return info;
}
