// The Node process's metrics: prom-client's default collectors (CPU, memory, heap spaces, handles,
// GC, event-loop lag and its percentiles from perf_hooks' monitorEventLoopDelay), under their
// standard names (process_cpu_seconds_total, nodejs_eventloop_lag_p99_seconds, ...) so the usual
// Node.js dashboards read them. They describe the process, not a router: one registry per process,
// created with the first router (so the event-loop figures cover its life), rendered after each router's own metrics (never prom-client's
// global registry, so an application embedding the router keeps its own).
import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

export function processMetrics(): Registry {
  if (registry === undefined) {
    registry = new Registry();
    // 10 ms: the event-loop delay histogram's resolution (prom-client's default).
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  }
  return registry;
}
