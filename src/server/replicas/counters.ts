// What the replica sync counts, read at scrape time (metrics) and by the benchmark (lag quantiles).
import type { RemoteBookingStats } from '../../core/routing-core.js';
import type { ReplicaStatsSample } from '../observability/replica-metrics.js';

/** Recent sync lags kept for quantiles (a ring: the newest LAG_SAMPLES batches). */
const LAG_SAMPLES = 4096;

export interface ReplicaSyncStats extends ReplicaStatsSample {
  connects: number;
  disconnects: number;
  /** Sync lag (publish to apply) of recent batches, in ms; null before any. */
  lagMs: { p50: number; p99: number; max: number; samples: number } | null;
}

type Live = Pick<ReplicaSyncStats, 'connected' | 'peers' | 'localBookings'> & { remote: RemoteBookingStats[] };

export class SyncCounters {
  private batchesOut = 0;
  private eventsOut = 0;
  private eventsUnsent = 0;
  private batchesIn = 0;
  private eventsIn = 0;
  private invalidMessages = 0;
  private rejectedEvents = 0;
  private gaps = 0;
  private resyncsOut = 0;
  private resyncsIn = 0;
  private replicasGone = 0;
  private connects = 0;
  private disconnects = 0;
  private readonly lags = new Float64Array(LAG_SAMPLES);
  private lagCount = 0;

  sent(events: number): void {
    this.batchesOut++;
    this.eventsOut += events;
  }

  unsent(events: number): void {
    this.eventsUnsent += events;
  }

  received(events: number, lagMs: number): void {
    this.batchesIn++;
    this.eventsIn += events;
    this.lags[this.lagCount++ % LAG_SAMPLES] = lagMs;
  }

  invalid(): void {
    this.invalidMessages++;
  }

  rejected(): void {
    this.rejectedEvents++;
  }

  gap(): void {
    this.gaps++;
  }

  resyncOut(): void {
    this.resyncsOut++;
  }

  resyncIn(): void {
    this.resyncsIn++;
  }

  replicaGone(): void {
    this.replicasGone++;
  }

  connected(): void {
    this.connects++;
  }

  disconnected(): void {
    this.disconnects++;
  }

  snapshot(live: Live): ReplicaSyncStats {
    const byOrigin = new Map<string, number>();
    for (const s of live.remote) for (const r of s.replicas) byOrigin.set(r.replica, (byOrigin.get(r.replica) ?? 0) + r.requests);
    return {
      connected: live.connected,
      peers: live.peers,
      localBookings: live.localBookings,
      batchesOut: this.batchesOut,
      eventsOut: this.eventsOut,
      eventsUnsent: this.eventsUnsent,
      batchesIn: this.batchesIn,
      eventsIn: this.eventsIn,
      invalidMessages: this.invalidMessages,
      rejectedEvents: this.rejectedEvents,
      gaps: this.gaps,
      resyncsOut: this.resyncsOut,
      resyncsIn: this.resyncsIn,
      replicasGone: this.replicasGone,
      connects: this.connects,
      disconnects: this.disconnects,
      bookingsByOrigin: [...byOrigin].map(([replica, requests]) => ({ replica, requests })),
      lagMs: this.lagQuantiles(),
    };
  }

  lagQuantiles(): ReplicaSyncStats['lagMs'] {
    const n = Math.min(this.lagCount, LAG_SAMPLES);
    if (n === 0) return null;
    const sorted = this.lags.slice(0, n).sort();
    const at = (q: number) => Math.round(sorted[Math.min(n - 1, Math.floor(q * n))] * 1000) / 1000;
    return { p50: at(0.5), p99: at(0.99), max: at(1), samples: n };
  }
}
