// The metrics of router replicas sharing state over NATS (src/server/replicas): read at scrape
// time from the sync's counters, except the sync lag, observed per received batch.
import { Gauge, Histogram, type Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './scraped.js';

/** What the replica sync reports (src/server/replicas/counters.ts fills it). */
export interface ReplicaStatsSample {
  connected: boolean;
  /** Other replicas heard within the TTL. */
  peers: number;
  /** This replica's own bookings, as announced. */
  localBookings: number;
  batchesOut: number;
  eventsOut: number;
  /** Events not sent because NATS was down (the announcement on return carries their state). */
  eventsUnsent: number;
  batchesIn: number;
  eventsIn: number;
  /** Messages that were not of the protocol (dropped whole). */
  invalidMessages: number;
  /** Events the load book refused (e.g. an empty request id). */
  rejectedEvents: number;
  /** Lost batches detected by sequence numbers. */
  gaps: number;
  /** Announcements of all bookings sent, and received. */
  resyncsOut: number;
  resyncsIn: number;
  /** Replicas that went silent past the TTL (their bookings released). */
  replicasGone: number;
  /** Bookings held here per other replica, summed over both pools. */
  bookingsByOrigin: Array<{ replica: string; requests: number }>;
}

// Loopback lag is sub-millisecond; a loaded or remote NATS tens of milliseconds.
const LAG_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** Registers the replica metrics; returns the lag observer. */
export function registerReplicaMetrics(registry: Registry, source: () => ReplicaStatsSample | undefined): (seconds: number) => void {
  const registers = [registry];
  const gauge = (name: string, help: string, pick: (s: ReplicaStatsSample) => number) => scrapedGauge(registry, source, name, help, pick);
  const counter = (name: string, help: string, labelName: string, picks: Record<string, (s: ReplicaStatsSample) => number>) =>
    scrapedCounter(registry, source, name, help, labelName, picks);
  gauge('kvroute_replicas_connected', '1 while this replica reaches NATS; 0: degraded, routing on its own view', (s) => (s.connected ? 1 : 0));
  gauge('kvroute_replicas_seen', 'Other router replicas heard within the TTL', (s) => s.peers);
  gauge('kvroute_replica_local_bookings', "This replica's own bookings, as announced to the others", (s) => s.localBookings);
  counter('kvroute_replica_batches_total', 'Booking batches sent (out) and received (in)', 'direction', { out: (s) => s.batchesOut, in: (s) => s.batchesIn });
  counter(
    'kvroute_replica_events_total',
    'Booking events by fate: out (sent), in (received), unsent (NATS down), rejected (refused by the load book)',
    'fate',
    {
      out: (s) => s.eventsOut,
      in: (s) => s.eventsIn,
      unsent: (s) => s.eventsUnsent,
      rejected: (s) => s.rejectedEvents,
    },
  );
  counter(
    'kvroute_replica_resyncs_total',
    'Announcements of all bookings: out (sent), in (received), gaps (lost batches detected), gone (replicas silent past the TTL)',
    'kind',
    {
      out: (s) => s.resyncsOut,
      in: (s) => s.resyncsIn,
      gaps: (s) => s.gaps,
      gone: (s) => s.replicasGone,
    },
  );
  counter('kvroute_replica_invalid_messages_total', 'Messages on the replica subjects that were not of the protocol (dropped)', 'kind', {
    any: (s) => s.invalidMessages,
  });
  new Gauge({
    name: 'kvroute_replica_bookings',
    help: 'Bookings of other replicas held here, per origin replica',
    labelNames: ['origin'] as const,
    registers,
    collect() {
      this.reset();
      for (const o of source()?.bookingsByOrigin ?? []) this.set({ origin: o.replica }, o.requests);
    },
  });
  const lag = new Histogram({
    name: 'kvroute_replica_sync_lag_seconds',
    help: 'Booking batch publish-to-apply delay (sender clock to receiver clock)',
    buckets: LAG_BUCKETS_S,
    registers,
  });
  return (seconds) => lag.observe(seconds);
}
