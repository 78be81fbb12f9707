// Assembles GET /dashboard/state (dashboard/state.ts) from the parts that own each figure: the
// registry (workers and their state), the backend (booked load, index, router queues, the latest
// decisions) and the metrics history. Read when the page polls, never on the request path.
import type { RouterConfig } from '../config/config.js';
import type { DashboardDecision, DashboardPool, DashboardState } from '../dashboard/state.js';
import type { PoolName, WorkerRegistry } from '../fleet/registry.js';
import type { MetricsHistory } from '../observability/metrics-history.js';
import type { Backend } from './backend.js';

/** Decisions the page lists. */
const DECISIONS_SHOWN = 20;

export interface DashboardParts {
  config: RouterConfig;
  registry: WorkerRegistry;
  backend: Backend;
  history: MetricsHistory;
  status(): string;
}

export function dashboardState(p: DashboardParts): DashboardState {
  const { config, registry, backend } = p;
  const loads = backend.metricsSources.workerLoads();
  const index = new Map(backend.metricsSources.indexStats().map((s) => [s.pool, s.blocks]));
  const queues = backend.scheduling.queueStats();
  const workers = registry.list();
  const pools: DashboardPool[] = (['prefill', 'decode'] as const).map((name: PoolName) => {
    const q = queues[name];
    return {
      name,
      policy: config[name].policy,
      indexed_blocks: index.get(name) ?? 0,
      queue: { depth: q.depth, tokens: q.tokens, oldest_wait_ms: q.oldestWaitMs, rejected: q.rejected },
      workers: workers
        .filter((w) => (w.role === 'prefill') === (name === 'prefill'))
        .map((w) => {
          const mine = loads.filter((l) => l.pool === name && l.worker === w.id);
          const sum = (pick: (l: (typeof mine)[number]) => number) => mine.reduce((n, l) => n + pick(l), 0);
          return {
            id: w.id,
            role: w.role,
            kind: w.kind,
            dp_size: w.dpSize,
            state: w.state,
            in_selection: w.inSelection,
            ejected: w.ejected,
            in_flight: sum((l) => l.requests),
            prefill_tokens: sum((l) => l.prefillTokens),
            decode_blocks: sum((l) => l.decodeBlocks),
            indexed_blocks: backend.indexedBlocks(name, w.id, w.dpSize),
          };
        }),
    };
  });
  const decisions: DashboardDecision[] = backend.recentDecisions(DECISIONS_SHOWN).map((r) => {
    const d: DashboardDecision = { request_id: r.requestId, at: r.at, legs: r.legs.map(({ lower_tier_blocks: _tiers, ...leg }) => leg) };
    if (r.done)
      Object.assign(d, { mode: r.done.mode, reason: r.done.reason, outcome: r.done.outcome, ttft_ms: r.done.ttftMs, output_tokens: r.done.outputTokens });
    return d;
  });
  return {
    at: Date.now(),
    status: p.status(),
    models: [...config.models],
    block_size: config.blockSize,
    pools,
    history: { interval_ms: p.history.intervalMs, points: p.history.series() },
    decisions,
  };
}
