// GET /health's body: ready or why not (draining, unavailable, warming), the workers by state,
// and what degrades the router without stopping it (replicas cut off from NATS, discovery cut off
// from the API server, workers whose KV events the index refuses).
import type { Discovery } from '../discovery/discovery.js';
import type { WorkerRegistry } from '../fleet/registry.js';
import type { Backend } from './backend.js';

export type RouterStatus = 'draining' | 'unavailable' | 'warming' | 'ready';

export interface HealthParts {
  status: RouterStatus;
  registry: WorkerRegistry;
  backend: Backend;
  discovery?: Discovery;
}

export function healthSummary(p: HealthParts) {
  const workers = p.registry.list();
  const count = (pred: (w: (typeof workers)[number]) => boolean) => workers.filter(pred).length;
  return {
    status: p.status,
    workers: workers.length,
    healthy: count((w) => w.state === 'healthy'),
    unhealthy: count((w) => w.state === 'unhealthy'),
    draining: count((w) => w.state === 'draining'),
    not_ready: count((w) => w.state === 'not_ready'),
    selectable: { prefill: p.registry.selectable('prefill').length, decode: p.registry.selectable('decode').length },
    // Degraded, not down: a replica cut off from NATS still serves, on its own view.
    replicas: p.backend.replicas?.status(),
    warm_start: p.backend.warmStart?.status(),
    // Degraded, not down: discovery cut off from the API server keeps the last known fleet.
    discovery: p.discovery?.status(),
    // Workers whose KV events the index refuses whole: they serve, but their cache earns no credit.
    kv_events: kvEventProblems(p.backend),
  };
}

function kvEventProblems(
  backend: Backend,
): Array<{ worker: number; problem: 'block_size_mismatch'; engine_block_size: number; router_block_size: number }> | undefined {
  const out = backend.metricsSources.eventStats().flatMap((s) =>
    s.blockSizeMismatch
      ? [
          {
            worker: s.worker,
            problem: 'block_size_mismatch' as const,
            engine_block_size: s.blockSizeMismatch.engineBlockSize,
            router_block_size: s.blockSizeMismatch.routerBlockSize,
          },
        ]
      : [],
  );
  return out.length > 0 ? out : undefined;
}
