// The metrics of worker discovery (src/server/discovery): read at scrape time; absent without it.
import type { Registry } from 'prom-client';
import { Gauge } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './scraped.js';

/** What discovery reports (src/server/discovery fills it). */
export interface DiscoveryStatsSample {
  /** The last list or watch reached the API server; false: routing on the last known fleet. */
  connected: boolean;
  pods: { ready: number; notReady: number; waiting: number; skipped: number };
  added: number;
  removed: number;
  restarted: number;
  /** Full lists of the pods (the first, and each after a 410 Gone). */
  lists: number;
  /** Lists and watches that failed (the API server unreachable, refused, a watch cut). */
  errors: number;
}

export function registerDiscoveryMetrics(registry: Registry, source: () => DiscoveryStatsSample | undefined): void {
  scrapedGauge(
    registry,
    source,
    'kvroute_discovery_connected',
    '1 while worker discovery reaches the Kubernetes API server; 0: routing on the last known fleet',
    (s) => (s.connected ? 1 : 0),
  );
  new Gauge({
    name: 'kvroute_discovery_pods',
    help: 'Pods the discovery selector picks, by state: ready (workers in selection), not_ready (workers out of selection), waiting (no pod IP or never Ready), skipped (a bad key, no http port, another model)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const s = source();
      if (!s) return;
      this.set({ state: 'ready' }, s.pods.ready);
      this.set({ state: 'not_ready' }, s.pods.notReady);
      this.set({ state: 'waiting' }, s.pods.waiting);
      this.set({ state: 'skipped' }, s.pods.skipped);
    },
  });
  scrapedCounter(
    registry,
    source,
    'kvroute_discovery_worker_changes_total',
    'Discovered workers added, removed, and restarted (removed and added afresh, index cleared)',
    'change',
    {
      added: (s) => s.added,
      removed: (s) => s.removed,
      restarted: (s) => s.restarted,
    },
  );
  scrapedCounter(
    registry,
    source,
    'kvroute_discovery_api_total',
    'Calls to the Kubernetes API server: lists (full lists of the pods) and errors (failed lists and watches)',
    'kind',
    {
      lists: (s) => s.lists,
      errors: (s) => s.errors,
    },
  );
}
