// ReplicaSync: this router's bookings told to its sibling replicas, and theirs applied here under
// their ids. Local booking changes go out in batches (outbox.ts); every replica heartbeats; a
// replica silent past the TTL, or restarted under a new epoch, has its bookings released here.
// Whenever the views may have diverged (a replica joined, NATS came back, batches were lost) the
// replicas re-announce all their bookings, which replaces what the others held of them.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { RemoteBooking, RemoteBookingStats } from '../../core/routing-core.js';
import type { PoolName } from '../../core/vocabulary.js';
import { POOL_NAMES } from '../../core/vocabulary.js';
import type { Logger } from '../../util/logger.js';
import { SteadyMap } from '../../util/steady-map.js';
import type { ReplicasConfig } from '../config/config.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsLink } from './link.js';
import { Outbox } from './outbox.js';
import { Peers } from './peers.js';
import { decodeBatch, decodeHeartbeat, encodeBatch, encodeHeartbeat, type BookEvent, type BookingBatch, type BookingEvent } from './protocol.js';
import { SyncCounters, type ReplicaSyncStats } from './counters.js';
import { SharedBucket } from './bucket.js';
import { SessionSync, type SessionTable } from './session-sync.js';
import { FleetSync } from './fleet-sync.js';
import type { FleetPort, ReplicaPort, ReplicaStatus } from './ports.js';
import type { SessionBinding } from '../../routing/session-affinity.js';
import type { FleetChange } from '../fleet/registry.js';

/** What the sync needs of each pool's RoutingCore. */
export interface RemoteBookingCore {
  applyRemoteBooking(replica: string, booking: RemoteBooking): boolean;
  markRemotePrefillCompleted(replica: string, requestId: string): boolean;
  freeRemote(replica: string, requestId: string): boolean;
  dropReplica(replica: string): number;
  remoteStats(): RemoteBookingStats;
}

/** A local booking as announced. */
export type LocalBooking = Omit<BookEvent, 'kind'>;

export interface ReplicaSyncOptions {
  config: ReplicasConfig;
  /** Names the cluster when config.cluster is absent. */
  model: string;
  cores: Record<PoolName, RemoteBookingCore>;
  log: Logger;
  /** Sees each received batch's sync lag (publish to apply), in seconds. */
  observeLag?: (seconds: number) => void;
  /** Session affinity's table and TTL, when it is on: its pins are shared too. */
  sessions?: { table: SessionTable; ttlMs: number };
}

interface Held {
  book: BookEvent;
  prefillDone: boolean;
  /** Date.now() of the booking's last change, for the stale sweep. */
  touchedAt: number;
}

export class ReplicaSync implements ReplicaPort {
  readonly id: string;
  readonly cluster: string;
  private readonly epoch = randomBytes(6).toString('hex');
  private readonly subjects: { bookings: string; heartbeats: string };
  private readonly link: NatsLink;
  private readonly outbox: Outbox;
  private readonly peers: Peers;
  // Not a Map: one entry per request in flight, and a churned Map's old tables keep their entries
  // alive to old-generation GCs once it has been through one (util/steady-map.ts says how).
  private readonly held = new SteadyMap<Held>();
  private readonly counters = new SyncCounters();
  private readonly log: Logger;
  private readonly cores: Record<PoolName, RemoteBookingCore>;
  private readonly buckets: SharedBucket[] = [];
  private readonly sessions?: SessionSync;
  private readonly fleet: FleetSync;
  private seq = 0;
  private since = Date.now();
  /** undefined before the first attempt. */
  private isUp?: boolean;
  private announcing?: { ask: boolean };
  private tick?: NodeJS.Timeout;
  private closed = false;
  /** The connection on which opening the buckets last failed (its warning is logged once). */
  private sharedFailing?: object;

  private constructor(private readonly o: ReplicaSyncOptions) {
    const c = o.config;
    this.id = c.id ?? defaultReplicaId();
    this.cluster = c.cluster ?? subjectToken(o.model);
    this.subjects = { bookings: `kvroute.${this.cluster}.bookings`, heartbeats: `kvroute.${this.cluster}.heartbeats` };
    this.cores = o.cores;
    this.log = o.log.child({ component: 'replicas', replica: this.id, cluster: this.cluster });
    this.peers = new Peers(c.ttlMs);
    this.outbox = new Outbox({ maxEvents: c.batchMaxEvents, maxDelayMs: c.batchMaxDelayMs, send: (events) => this.sendBatch(events, false, false) });
    this.link = new NatsLink({
      servers: c.nats.split(','),
      name: `kvroute ${this.cluster}/${this.id}`,
      connectTimeoutMs: c.connectTimeoutMs,
      retryMs: Math.min(1000, c.heartbeatMs),
      log: this.log,
      onUp: () => this.up(),
      onDown: (reason) => this.down(reason),
    });
    const bucket = (kind: string, ttlMs: number | undefined, onEntry: (key: string, value: Record<string, unknown> | null) => void) => {
      const b = new SharedBucket({
        name: `kvroute_${this.cluster}_${kind}`,
        ttlMs,
        epoch: this.epoch,
        log: this.log,
        onEntry,
        onInvalid: () => this.counters.invalid(),
      });
      this.buckets.push(b);
      return b;
    };
    const fleet: FleetSync = new FleetSync(
      bucket('fleet', undefined, (k, v) => fleet.received(k, v)),
      this.log,
      () => this.counters.invalid(),
    );
    this.fleet = fleet;
    const s = o.sessions;
    if (s) {
      const sessions: SessionSync = new SessionSync(
        bucket('sessions', s.ttlMs, (k, v) => sessions.received(k, v)),
        s.table,
        () => this.counters.invalid(),
      );
      this.sessions = sessions;
    }
    this.link.on(this.subjects.bookings, (data) => this.receiveBatch(data));
    this.link.on(this.subjects.heartbeats, (data) => this.receiveHeartbeat(data));
  }

  /**
   * Connects (waiting up to connectTimeoutMs; degraded and retrying after that) and starts
   * heartbeating. `inBackground`: NATS was just found unreachable, start degraded without waiting.
   */
  static async start(o: ReplicaSyncOptions, inBackground = false): Promise<ReplicaSync> {
    const sync = new ReplicaSync(o);
    if (inBackground) void sync.link.start();
    else await sync.link.start();
    sync.tick = setInterval(() => sync.heartbeat(), o.config.heartbeatMs);
    sync.tick.unref();
    return sync;
  }

  // ---- local booking changes (the wiring calls these once the core has done them) ----------

  booked(b: LocalBooking): void {
    const book: BookEvent = Object.assign({ kind: 'book' as const }, b);
    this.held.set(key(b.pool, b.requestId), { book, prefillDone: false, touchedAt: Date.now() });
    this.outbox.push(book);
  }

  prefillDone(pool: PoolName, requestId: string): void {
    const h = this.held.get(key(pool, requestId));
    if (!h) return;
    h.prefillDone = true;
    h.touchedAt = Date.now();
    this.outbox.push({ kind: 'prefill_done', pool, requestId });
  }

  freed(pool: PoolName, requestId: string): void {
    if (!this.held.delete(key(pool, requestId))) return;
    this.outbox.push({ kind: 'free', pool, requestId });
  }

  /**
   * Forgets local bookings untouched for `staleMs`, as the cores' stale sweep frees them (requests
   * that vanished without ending), and tells the others; returns how many.
   */
  sweepStale(staleMs: number): number {
    const cutoff = Date.now() - staleMs;
    let n = 0;
    for (const h of this.held.values()) {
      if (h.touchedAt > cutoff) continue;
      this.freed(h.book.pool, h.book.requestId);
      n++;
    }
    return n;
  }

  /** A session this replica bound or refreshed (session affinity's onBind). */
  sessionBound(sessionId: string, binding: SessionBinding): void {
    this.sessions?.bound(sessionId, binding);
  }

  /** The registry, once it holds the configured workers: the shared fleet applies to it from now on. */
  attachFleet(fleet: FleetPort): void {
    this.fleet.attach(fleet);
  }

  /** A change made through this replica's admin API (the registry's onChange). */
  fleetChanged(change: FleetChange): void {
    this.fleet.changed(change);
  }

  /** The live NATS connection (the snapshot publisher's), while connected. */
  get connection(): NatsConnection | undefined {
    return this.link.connection;
  }

  status(): ReplicaStatus {
    return {
      id: this.id,
      cluster: this.cluster,
      connected: this.link.connected,
      since: this.since,
      peers: this.peers.list(Date.now()),
      syncLagMs: this.counters.lagQuantiles(),
    };
  }

  stats(): ReplicaSyncStats {
    const remote = POOL_NAMES.map((p) => this.cores[p].remoteStats());
    return this.counters.snapshot({ connected: this.link.connected, peers: this.peers.size, localBookings: this.held.size, remote });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.tick);
    // What is pending goes out, so the others free what this replica freed last.
    this.outbox.flush();
    for (const b of this.buckets) b.suspend();
    await this.link.close();
  }

  // ---- the wire --------------------------------------------------------------------------

  private sendBatch(events: BookingEvent[], reset: boolean, ask: boolean): void {
    const batch: BookingBatch = { from: this.id, epoch: this.epoch, sentAt: wallClockMs(), seq: ++this.seq, reset, ask, events };
    if (this.link.publish(this.subjects.bookings, encodeBatch(batch))) this.counters.sent(events.length);
    else this.counters.unsent(events.length);
  }

  private heartbeat(): void {
    if (this.closed) return;
    this.link.publish(this.subjects.heartbeats, encodeHeartbeat({ from: this.id, epoch: this.epoch, sentAt: Date.now(), bookings: this.held.size }));
    for (const replica of this.peers.expire(Date.now())) {
      const released = this.dropAll(replica);
      this.counters.replicaGone();
      this.log.warn({ peer: replica, released, ttl_ms: this.o.config.ttlMs }, 'replica went silent: its bookings were released');
    }
  }

  private receiveBatch(data: Uint8Array): void {
    const b = decodeBatch(data);
    if (!b) return this.counters.invalid();
    if (b.from === this.id) return;
    const now = Date.now();
    const lagMs = Math.max(0, wallClockMs() - b.sentAt);
    this.counters.received(b.events.length, lagMs);
    this.o.observeLag?.(lagMs / 1000);
    const verdict = this.heardFrom(b.from, b.epoch, now);
    const inOrder = this.peers.sequence(b.from, b.seq, b.reset);
    if (b.reset) {
      this.dropAll(b.from);
      this.counters.resyncIn();
    }
    for (const e of b.events) this.apply(b.from, e);
    if (b.ask) this.announce(false);
    else if (verdict !== 'known') this.announce(!b.reset);
    else if (!inOrder) {
      this.counters.gap();
      this.log.warn({ peer: b.from, seq: b.seq }, 'booking batches from a replica were lost: asking for its bookings again');
      this.announce(true);
    }
  }

  private receiveHeartbeat(data: Uint8Array): void {
    const h = decodeHeartbeat(data);
    if (!h) return this.counters.invalid();
    if (h.from === this.id) return;
    if (this.heardFrom(h.from, h.epoch, Date.now()) !== 'known') this.announce(true);
  }

  /** Notes the peer; a restarted one's old bookings are released. */
  private heardFrom(replica: string, epoch: string, now: number): ReturnType<Peers['heard']> {
    const verdict = this.peers.heard(replica, epoch, now);
    if (verdict === 'new') this.log.info({ peer: replica }, 'replica joined');
    if (verdict === 'restarted') {
      const released = this.dropAll(replica);
      this.log.info({ peer: replica, released }, 'replica restarted: the bookings of its previous run were released');
    }
    return verdict;
  }

  private apply(from: string, e: BookingEvent): void {
    const core = this.cores[e.pool];
    try {
      switch (e.kind) {
        case 'book':
          core.applyRemoteBooking(from, e);
          break;
        case 'prefill_done':
          core.markRemotePrefillCompleted(from, e.requestId);
          break;
        case 'free':
          core.freeRemote(from, e.requestId);
          break;
      }
    } catch (err) {
      this.counters.rejected();
      this.log.debug({ peer: from, request_id: e.requestId, err }, 'booking event refused');
    }
  }

  private dropAll(replica: string): number {
    return POOL_NAMES.reduce((n, p) => n + this.cores[p].dropReplica(replica), 0);
  }

  /** All this replica's bookings, soon (several reasons in one turn make one announcement). */
  private announce(ask: boolean): void {
    if (this.announcing) {
      this.announcing.ask ||= ask;
      return;
    }
    this.announcing = { ask };
    setImmediate(() => {
      const { ask: asking } = this.announcing!;
      this.announcing = undefined;
      if (!this.closed) this.announceNow(asking);
    });
  }

  private announceNow(ask: boolean): void {
    // The announcement carries the state the pending events would have changed.
    this.outbox.clear();
    // Down: the connection's return announces.
    if (!this.link.connected) return;
    const events: BookingEvent[] = [];
    for (const h of this.held.values()) {
      events.push(h.book);
      if (h.prefillDone) events.push({ kind: 'prefill_done', pool: h.book.pool, requestId: h.book.requestId });
    }
    const per = this.o.config.batchMaxEvents;
    this.sendBatch(events.slice(0, per), true, ask);
    for (let i = per; i < events.length; i += per) this.sendBatch(events.slice(i, i + per), false, false);
    this.counters.resyncOut();
  }

  private up(): void {
    this.isUp = true;
    this.since = Date.now();
    this.log.info({ nats: this.o.config.nats, peers: this.peers.size }, "replicas: connected to NATS, announcing this replica's bookings");
    this.counters.connected();
    // Others may have dropped us, and we missed what they did meanwhile: both sides re-announce.
    this.announce(true);
    this.heartbeat();
    void this.openShared();
  }

  /** Session pins and the fleet: pending writes out, then the buckets replayed and watched. */
  private async openShared(): Promise<void> {
    const nc = this.link.connection;
    if (!nc) return;
    try {
      await Promise.all(this.buckets.map((b) => b.open(nc)));
      if (this.sharedFailing === nc) this.log.info('replicas: the shared session and fleet buckets are open');
      this.sharedFailing = undefined;
    } catch (err) {
      // JetStream off on the server, or slow to answer, or NATS lost meanwhile (its return reopens).
      // Once per connection, not once per retry.
      if (this.sharedFailing !== nc)
        this.log.warn({ err }, 'replicas: the shared session and fleet buckets are unavailable (is JetStream on?); bookings are still shared, retrying');
      this.sharedFailing = nc;
      if (this.closed || this.link.connection !== nc) return;
      const retry = setTimeout(() => {
        if (!this.closed && this.link.connection === nc) void this.openShared();
      }, SHARED_RETRY_MS);
      retry.unref();
    }
  }

  private down(reason: string): void {
    this.outbox.clear();
    for (const b of this.buckets) b.suspend();
    // Once per outage, not once per retry.
    if (this.isUp === false) return;
    this.isUp = false;
    this.since = Date.now();
    this.counters.disconnected();
    this.log.warn(
      { reason, ttl_ms: this.o.config.ttlMs },
      "replicas: NATS unreachable, routing on this replica's own view until it returns (the others' bookings are released after the TTL)",
    );
  }
}

/** Between attempts to open the shared buckets while connected. */
const SHARED_RETRY_MS = 2000;

/** Milliseconds since the epoch with sub-millisecond resolution (loopback sync lag is below 1 ms). */
function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

function key(pool: PoolName, requestId: string): string {
  return pool === 'prefill' ? `p:${requestId}` : `d:${requestId}`;
}

/** A NATS subject token from any name: characters outside [A-Za-z0-9_-] become _. */
export function subjectToken(name: string): string {
  const t = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  return t === '' ? '_' : t;
}

export function defaultReplicaId(): string {
  return subjectToken(`${hostname()}-${process.pid}`);
}
