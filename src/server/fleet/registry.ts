// The worker registry: which workers exist, their state, and the one place that moves a worker in
// and out of the parts that use it: the routing pool of its role (selection), the KV event ingest
// (its index), and health checking. Admin calls (add, drain, activate, remove) and health verdicts
// both come through here, so the pools never disagree with the registry. Workers discovery added
// (src/server/discovery) are its own: only it removes them, and their changes are never shared
// with router replicas (each replica discovers for itself).
import type { WorkerConfig, WorkerRole } from '../config/config.js';
import { checkUniqueIds } from '../config/config.js';
import { HealthTracker } from './health.js';
import { withFields } from '../../util/objects.js';
import { redactUrl, silentLogger, type Logger } from '../../util/logger.js';
import type { PoolName } from '../../core/vocabulary.js';

export type { PoolName };
export type WorkerState = 'healthy' | 'unhealthy' | 'draining' | 'not_ready';

/** What a discovered worker stands for: the Kubernetes pod (namespace/name) it runs in. */
export interface Discovered {
  source: 'kubernetes';
  pod: string;
}

/** A routing pool as the registry drives it (the wiring adapts E's routers to this). */
export interface PoolPort {
  /** Puts the worker into selection (idempotent). */
  enable(worker: WorkerConfig): void;
  /** Takes it out of selection; requests in flight finish normally (idempotent). */
  disable(worker: number): void;
  /** Forgets the worker (it was removed from the registry). */
  remove(worker: number): void;
  /** Drops everything the pool's index holds for the worker. */
  dropBlocks(worker: number): void;
  /** Booked requests on the worker (drain progress). */
  activeRequests(worker: number): number;
  /** A health check of the worker passed (ends an ejection for connect failures). */
  healthCheckPassed?(worker: number): void;
  /** The worker's ejections (outlier detection), when the pool ejects. */
  ejection?(worker: number): Ejection | undefined;
}

/** A worker's passive ejection state (routing/outlier-detection.ts). */
export interface Ejection {
  /** Out of selection now, after consecutive failures. */
  ejected: boolean;
  /** Ejections since the worker joined. */
  ejections: number;
  /** While ejected: when it comes back at the latest (ms since the epoch). */
  ejectedUntil?: number;
  lastReason?: string;
}

/** KV event subscriptions (the wiring adapts F's ingest to this). */
export interface IngestPort {
  subscribe(worker: WorkerConfig, pool: PoolName): void;
  unsubscribe(worker: number): void;
  /** The worker's event streams prove its index follows the engine process now running (false without streams). */
  continuous(worker: number): boolean;
  /** The engine may have restarted unseen: drop its blocks now and rebuild them from its replay buffer, if any. */
  resync(worker: number, reason: string): void;
}

export interface WorkerStatus {
  id: number;
  role: WorkerRole;
  kind: WorkerConfig['kind'];
  /** Credentials in the URL are shown as `***`. */
  baseUrl: string;
  dpSize: number;
  state: WorkerState;
  /** Takes new requests: healthy, not draining, not ejected. */
  inSelection: boolean;
  /** Out of selection after consecutive failures (outlier detection), until `ejection.ejectedUntil`. */
  ejected: boolean;
  /** Present once the worker was ejected at least once. */
  ejection?: Omit<Ejection, 'ejected'>;
  activeRequests: number;
  /** Present for a worker that discovery added (and alone removes). */
  discovered?: Discovered;
  lastHealthError?: string;
  unhealthySince?: number;
}

/** A change to the fleet made through the registry (the admin API; never discovery's): what router replicas share. */
export interface FleetChange {
  op: 'add' | 'drain' | 'activate' | 'remove';
  worker: WorkerConfig;
}

export interface RegistryOptions {
  pools: Record<PoolName, PoolPort>;
  ingest: IngestPort;
  healthGraceMs: number;
  clock?: () => number;
  /** Workers added and removed, state changes with their reason (default: nothing logged). */
  log?: Logger;
  /** Sees every add, drain, activate and remove once done (not health verdicts): the port router replicas share the fleet through. */
  onChange?: (change: FleetChange) => void;
}

interface Entry {
  config: WorkerConfig;
  draining: boolean;
  /** False while discovery says its pod is not Ready. */
  ready: boolean;
  inSelection: boolean;
  discovered?: Discovered;
  /** The engine's process start time (seconds) as its /metrics last said. */
  startTime?: number;
}

export class UnknownWorkerError extends Error {
  override name = 'UnknownWorkerError';
  constructor(readonly worker: number) {
    super(`no worker with id ${worker}`);
  }
}

/** Discovery owns the worker: the admin API may drain it, not remove it. */
export class DiscoveredWorkerError extends Error {
  override name = 'DiscoveredWorkerError';
  constructor(
    readonly worker: number,
    readonly pod: string,
  ) {
    super(`worker ${worker} was discovered from the pod ${pod}: it leaves with the pod (drain it to stop sending it requests)`);
  }
}

export class WorkerExistsError extends Error {
  override name = 'WorkerExistsError';
  constructor(readonly worker: number) {
    super(`a worker with id ${worker} is already registered`);
  }
}

/** Prefill workers serve the prefill pool; aggregated and decode workers the decode pool. */
export function poolOf(role: WorkerRole): PoolName {
  return role === 'prefill' ? 'prefill' : 'decode';
}

export class WorkerRegistry {
  private readonly entries = new Map<number, Entry>();
  private readonly health: HealthTracker;
  private readonly clock: () => number;
  private readonly log: Logger;

  constructor(private readonly opts: RegistryOptions) {
    this.health = new HealthTracker(opts.healthGraceMs);
    this.clock = opts.clock ?? Date.now;
    this.log = opts.log ?? silentLogger;
  }

  /**
   * Registers a worker: healthy until a check says otherwise, in selection, events subscribed. All
   * or nothing: when a part refuses it (its event endpoints, the pool), everything done for it is
   * undone before the error is thrown, so a refused worker never lingers. `discovered`: discovery
   * adds it (then it alone removes it, and the change is not shared with replicas).
   */
  add(config: WorkerConfig, discovered?: Discovered): void {
    if (this.entries.has(config.id)) throw new WorkerExistsError(config.id);
    checkUniqueIds([...[...this.entries.values()].map((e) => e.config), config]);
    const entry: Entry = { config, draining: false, ready: true, inSelection: false };
    if (discovered) entry.discovered = discovered;
    const pool = this.opts.pools[poolOf(config.role)];
    let subscribed = false;
    try {
      this.opts.ingest.subscribe(config, poolOf(config.role));
      subscribed = true;
      this.entries.set(config.id, entry);
      this.health.add(config.id);
      this.sync(entry);
    } catch (err) {
      this.entries.delete(config.id);
      this.health.remove(config.id);
      if (subscribed) this.opts.ingest.unsubscribe(config.id);
      if (entry.inSelection) pool.disable(config.id);
      pool.remove(config.id);
      throw err;
    }
    this.log.info(
      {
        worker: config.id,
        role: config.role,
        kind: config.kind,
        url: redactUrl(config.baseUrl),
        dp_size: config.dpSize,
        kv_events: config.kvEvents.length > 0,
        pod: discovered?.pod,
      },
      'worker added',
    );
    this.shared(entry, 'add');
  }

  /** Stops new requests from going to the worker; requests in flight finish. */
  drain(id: number): WorkerStatus {
    const entry = this.get(id);
    entry.draining = true;
    this.sync(entry);
    this.log.info({ worker: id, active_requests: this.opts.pools[poolOf(entry.config.role)].activeRequests(id) }, 'worker draining (admin API)');
    this.shared(entry, 'drain');
    return this.status(entry);
  }

  /** Undoes drain: the worker takes requests again once healthy. */
  activate(id: number): WorkerStatus {
    const entry = this.get(id);
    entry.draining = false;
    this.sync(entry);
    this.log.info({ worker: id, state: this.stateOf(entry) }, 'worker activated (admin API)');
    this.shared(entry, 'activate');
    return this.status(entry);
  }

  /**
   * Forgets the worker: out of selection, events unsubscribed, its blocks dropped from the index.
   * Bookings of requests still in flight on it are released as those end. A discovered worker is
   * refused (DiscoveredWorkerError): it leaves with its pod (removeDiscovered).
   */
  remove(id: number): WorkerStatus {
    const entry = this.get(id);
    if (entry.discovered) throw new DiscoveredWorkerError(id, entry.discovered.pod);
    return this.forget(entry);
  }

  /** Discovery's remove: its pod was deleted, or replaced by one the worker no longer describes. */
  removeDiscovered(id: number): WorkerStatus {
    const entry = this.get(id);
    if (!entry.discovered) throw new TypeError(`worker ${id} was not discovered: discovery never removes it`);
    return this.forget(entry);
  }

  /** Discovery's word on the worker's pod: not Ready leaves selection (requests in flight finish), Ready comes back. */
  setReady(id: number, ready: boolean): void {
    const entry = this.get(id);
    if (entry.ready === ready) return;
    entry.ready = ready;
    this.sync(entry);
    this.log.info(
      { worker: id, pod: entry.discovered?.pod, state: this.stateOf(entry), in_selection: entry.inSelection },
      ready ? 'worker ready again (its pod)' : 'worker not ready (its pod): out of selection, requests in flight finish',
    );
  }

  private forget(entry: Entry): WorkerStatus {
    const id = entry.config.id;
    const status = this.status(entry);
    entry.draining = true;
    this.sync(entry);
    this.opts.ingest.unsubscribe(id);
    const pool = this.opts.pools[poolOf(entry.config.role)];
    pool.dropBlocks(id);
    pool.remove(id);
    this.health.remove(id);
    this.entries.delete(id);
    this.log.info({ worker: id, pod: entry.discovered?.pod }, 'worker removed');
    this.shared(entry, 'remove');
    return withFields(status, { state: 'draining' as const, inSelection: false });
  }

  /** Tells the replicas of a change, unless discovery owns the worker (each replica discovers for itself). */
  private shared(entry: Entry, op: FleetChange['op']): void {
    if (!entry.discovered) this.opts.onChange?.({ op, worker: entry.config });
  }

  /**
   * A health check result: unhealthy leaves selection at once, healthy comes back, its blocks kept
   * only when its event streams prove the engine did not restart meanwhile. `startTime`: the
   * engine's process start time, when its /metrics reports one; a new value is a restart.
   */
  recordHealth(id: number, ok: boolean, error?: string, startTime?: number): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    const blocksDropped = this.health.status(id)?.blocksDropped === true;
    const verdict = this.health.record(id, ok, this.clock(), error);
    if (ok) this.opts.pools[poolOf(entry.config.role)].healthCheckPassed?.(id);
    if (startTime !== undefined) {
      const before = entry.startTime;
      entry.startTime = startTime;
      if (before !== undefined && before !== startTime) {
        this.opts.ingest.resync(id, `the engine's process_start_time_seconds changed from ${before} to ${startTime}: it restarted`);
        this.log.warn(
          { worker: id, url: redactUrl(entry.config.baseUrl), start_time: startTime, previous_start_time: before },
          "engine restarted (its start time changed): the worker's blocks were cleared",
        );
      }
    }
    // Unreachable, it may have restarted: unknown until its event streams prove otherwise.
    if (verdict === 'became_healthy' && (blocksDropped || !this.opts.ingest.continuous(id))) {
      this.opts.ingest.resync(id, 'the worker was unreachable and its event streams do not prove the engine kept running');
      this.log.info(
        { worker: id },
        'worker back after being unreachable: its blocks were cleared (no proof the engine kept its cache), rebuilt from its replay buffer',
      );
    }
    if (verdict === 'became_unhealthy' || verdict === 'became_healthy') {
      this.sync(entry);
      const fields = { worker: id, url: redactUrl(entry.config.baseUrl), state: this.stateOf(entry), in_selection: entry.inSelection };
      if (verdict === 'became_unhealthy') this.log.warn(withFields(fields, { error }), 'worker unhealthy: out of selection');
      else this.log.info(fields, 'worker healthy again');
    }
    this.expireGrace();
  }

  /** Drops the blocks of workers unhealthy for longer than the grace period. */
  expireGrace(): number[] {
    const expired = this.health.expired(this.clock());
    for (const id of expired) {
      const entry = this.entries.get(id);
      if (!entry) continue;
      this.opts.pools[poolOf(entry.config.role)].dropBlocks(id);
      this.log.warn({ worker: id, grace_ms: this.opts.healthGraceMs }, 'worker unhealthy past the grace period: its blocks left the index');
    }
    return expired;
  }

  /** The id of the worker with this base URL (error answers name workers, never URLs). */
  workerWithUrl(baseUrl: string): number | undefined {
    for (const e of this.entries.values()) if (e.config.baseUrl === baseUrl) return e.config.id;
    return undefined;
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  /** Drained through the admin API (and not activated since). */
  isDraining(id: number): boolean {
    return this.entries.get(id)?.draining === true;
  }

  config(id: number): WorkerConfig | undefined {
    return this.entries.get(id)?.config;
  }

  list(): WorkerStatus[] {
    return [...this.entries.values()].map((e) => this.status(e));
  }

  /** Workers currently in selection, by pool. */
  selectable(pool: PoolName): WorkerConfig[] {
    return [...this.entries.values()].filter((e) => e.inSelection && poolOf(e.config.role) === pool).map((e) => e.config);
  }

  /** At least one decode or aggregated worker can take a request. */
  canServe(): boolean {
    return this.selectable('decode').length > 0;
  }

  healthTargets(): Array<{ id: number; baseUrl: string }> {
    return [...this.entries.values()].map((e) => ({ id: e.config.id, baseUrl: e.config.baseUrl }));
  }

  private get(id: number): Entry {
    const entry = this.entries.get(id);
    if (!entry) throw new UnknownWorkerError(id);
    return entry;
  }

  private stateOf(entry: Entry): WorkerState {
    if (entry.draining) return 'draining';
    if (!entry.ready) return 'not_ready';
    return this.health.isHealthy(entry.config.id) ? 'healthy' : 'unhealthy';
  }

  private status(entry: Entry): WorkerStatus {
    const h = this.health.status(entry.config.id);
    const c = entry.config;
    const pool = this.opts.pools[poolOf(c.role)];
    const e = pool.ejection?.(c.id);
    const ejected = e?.ejected === true;
    return {
      id: c.id,
      role: c.role,
      kind: c.kind,
      baseUrl: redactUrl(c.baseUrl),
      dpSize: c.dpSize,
      state: this.stateOf(entry),
      inSelection: entry.inSelection && !ejected,
      ejected,
      ...(e && e.ejections > 0 ? { ejection: ejectionOf(e) } : {}),
      activeRequests: pool.activeRequests(c.id),
      ...(entry.discovered ? { discovered: entry.discovered } : {}),
      ...(h?.lastError ? { lastHealthError: h.lastError } : {}),
      ...(h?.unhealthySince !== undefined ? { unhealthySince: h.unhealthySince } : {}),
    };
  }

  /** Puts the worker in or out of selection according to its state. */
  private sync(entry: Entry): void {
    const want = this.stateOf(entry) === 'healthy';
    if (want === entry.inSelection) return;
    const pool = this.opts.pools[poolOf(entry.config.role)];
    if (want) pool.enable(entry.config);
    else pool.disable(entry.config.id);
    entry.inSelection = want;
  }
}

function ejectionOf(e: Ejection): Omit<Ejection, 'ejected'> {
  const out: Omit<Ejection, 'ejected'> = { ejections: e.ejections };
  if (e.ejectedUntil !== undefined) out.ejectedUntil = e.ejectedUntil;
  if (e.lastReason !== undefined) out.lastReason = e.lastReason;
  return out;
}
