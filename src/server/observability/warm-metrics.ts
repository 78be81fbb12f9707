// The metrics of a router replica's warm start and of the index snapshots it publishes
// (src/server/replicas/warm-start.ts), read at scrape time.
import { Counter, Gauge, type Registry } from 'prom-client';

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
  const registers = [registry];
  const gauge = (name: string, help: string, pick: (s: WarmStartSample) => number | undefined) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const s = source();
        const v = s && pick(s);
        if (v !== undefined) this.set(v);
      },
    });
  gauge('kvroute_replica_warm_ready', '1 once the warm start is over (restored index caught up, cold start decided, or warmStartTimeoutMs passed)', (s) => (s.ready ? 1 : 0));
  gauge('kvroute_replica_time_to_ready_seconds', 'From startup to ready (snapshot fetch, restore and catch-up included)', (s) => s.readySeconds);
  gauge('kvroute_replica_snapshot_age_seconds', 'Age of the newest index snapshot this replica restored or published', (s) => s.snapshotAgeSeconds);
  gauge('kvroute_replica_snapshot_bytes', 'Size of the newest index snapshot this replica restored or published', (s) => s.snapshotBytes);
  new Counter({
    name: 'kvroute_replica_restores_total',
    help: 'Warm starts by outcome: restored, or why not (absent, rejected, mismatch, stale, unavailable, off)',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      this.reset();
      const s = source();
      if (!s) return;
      for (const o of OUTCOMES) this.inc({ outcome: o }, o === s.outcome ? 1 : 0);
    },
  });
  new Counter({
    name: 'kvroute_replica_snapshots_published_total',
    help: 'Index snapshots this replica published for warm starts (ok), and attempts that failed',
    labelNames: ['result'] as const,
    registers,
    collect() {
      this.reset();
      const s = source();
      if (!s) return;
      this.inc({ result: 'ok' }, s.published);
      this.inc({ result: 'failed' }, s.publishFailures);
    },
  });
}
