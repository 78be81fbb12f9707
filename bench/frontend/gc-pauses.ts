// The router process's own GC pauses while a load runs (PerformanceObserver 'gc' entries): a
// young-generation collection stops the router thread, so its length bounds what it adds to the
// latency of the requests in flight.
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { median } from '../lib/stats.js';

export interface GcPauses {
  /** Young-generation collections (scavenges) per second. */
  scavenges_per_s: number;
  scavenge_p50_ms: number;
  scavenge_max_ms: number;
  /** Full (mark-compact) collections. */
  full_gcs: number;
}

/** Records this process's GC pauses until stop() is called. */
export function recordGcPauses(): { stop(): GcPauses } {
  const scavenges: number[] = [];
  let full = 0;
  const started = performance.now();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges.push(e.duration);
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      observer.disconnect();
      const seconds = (performance.now() - started) / 1000;
      return {
        scavenges_per_s: Math.round((scavenges.length / seconds) * 10) / 10,
        scavenge_p50_ms: scavenges.length ? Math.round(median(scavenges) * 1000) / 1000 : 0,
        scavenge_max_ms: scavenges.length ? Math.round(Math.max(...scavenges) * 1000) / 1000 : 0,
        full_gcs: full,
      };
    },
  };
}
