// The metrics of a router replica's warm start and of the index snapshots it publishes
// (src/server/replicas/warm-start.ts), read at scrape time.
import type { Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './scraped.js';

/** What /metrics reads of the warm start and the snapshot publishing. */
export interface WarmStartSample {
  outcome: string;
  ready: boolean;
  readySeconds?: number;
  /** Age of the newest snapshot this replica loaded or published, and its size. */
  snapshotAgeSeconds?: number;
  snapshotBytes?: number;
  published: number;
  publishFailures: number;
}

const OUTCOMES = ['restored', 'absent', 'rejected', 'mismatch', 'stale', 'unavailable', 'off'];

export function registerWarmStartMetrics(registry: Registry, source: () => WarmStartSample | undefined): void {
  const gauge = (name: string, help: string, pick: (s: WarmStartSample) => number | undefined) => scrapedGauge(registry, source, name, help, pick);
  gauge('kvroute_replica_warm_ready', '1 once the warm start is over (restored index caught up, cold start decided, or warmStartTimeoutMs passed)', (s) =>
    s.ready ? 1 : 0,
  );
  gauge('kvroute_replica_time_to_ready_seconds', 'From startup to ready (snapshot fetch, restore and catch-up included)', (s) => s.readySeconds);
  gauge('kvroute_replica_snapshot_age_seconds', 'Age of the newest index snapshot this replica restored or published', (s) => s.snapshotAgeSeconds);
  gauge('kvroute_replica_snapshot_bytes', 'Size of the newest index snapshot this replica restored or published', (s) => s.snapshotBytes);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, (s: WarmStartSample) => (s.outcome === o ? 1 : 0)]));
  scrapedCounter(
    registry,
    source,
    'kvroute_replica_restores_total',
    'Warm starts by outcome: restored, or why not (absent, rejected, mismatch, stale, unavailable, off)',
    'outcome',
    outcomes,
  );
  scrapedCounter(
    registry,
    source,
    'kvroute_replica_snapshots_published_total',
    'Index snapshots this replica published for warm starts (ok), and attempts that failed',
    'result',
    {
      ok: (s) => s.published,
      failed: (s) => s.publishFailures,
    },
  );
}
