// The kvroute router in a process of its own, as `kvroute serve` runs it: the compiled package
// (dist/, built by the suite's prepare with `npm run build:ts`), plain node with the flags npm
// start gives it, no TypeScript loader. Under tsx the router paid for its loader's output too
// (esbuild's keepNames wraps every closure in a __name() call that defines its name property):
// 35 us more router CPU per request in this suite (2026-11-28). Its CPU time per request is
// measured as SMG's is: the whole process's over a round. Started by kvroute-router.ts, over IPC.
// With KVROUTE_PEERS_ROUTER_GC_STATS set it also counts its GC pauses (perf_hooks' gc entries)
// and answers the message 'gc' with them (the longest pause since the previous 'gc') (router-flags-series.ts compares node flag sets by them).
// With KVROUTE_PEERS_ROUTER_STAGES set it records each request's stage times (router-stages.mjs)
// and answers the message 'stages' with them (stage-probe.ts).
// Run with --expose-gc it answers the message 'fullGc' after a full GC (router-drift.ts).
// @ts-check
import { PerformanceObserver } from 'node:perf_hooks';
import { parseRouterConfig, startServer } from '../../../dist/server/index.js';

const input = JSON.parse(process.env.KVROUTE_PEERS_ROUTER_CONFIG ?? '{}');
const gc = process.env.KVROUTE_PEERS_ROUTER_GC_STATS ? gcStats() : undefined;
const stages = process.env.KVROUTE_PEERS_ROUTER_STAGES ? (await import('./router-stages.mjs')).recordStages() : undefined;
const started = await startServer({ config: parseRouterConfig(input) });
process.on('message', (m) => {
  if (m === 'gc') {
    // Counts and totals run on; the longest pause is since the last ask.
    process.send?.({ gc: structuredClone(gc ?? {}) });
    for (const k of Object.values(gc ?? {})) k.maxMs = 0;
  }
  if (m === 'stages') process.send?.({ stages: stages?.take() ?? {} });
  if (m === 'fullGc') {
    const gcNow = /** @type {{ gc?: () => void }} */ (globalThis).gc;
    gcNow?.();
    process.send?.({ fullGc: gcNow !== undefined });
  }
  if (m !== 'close') return;
  void started.close().finally(() => process.exit(0));
});
process.send?.({ url: started.server.url });

/** Pauses per GC kind (perf_hooks' detail.kind: 1 scavenge, 2 minor mark-sweep, 4 mark-compact, 8 incremental marking, 16 weak callbacks). */
function gcStats() {
  /** @type {Record<string, { count: number, totalMs: number, maxMs: number, over1Ms: number }>} */
  const byKind = {};
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const k = (byKind[/** @type {{ detail?: { kind?: number } }} */ (e).detail?.kind ?? 0] ??= { count: 0, totalMs: 0, maxMs: 0, over1Ms: 0 });
      k.count += 1;
      k.totalMs += e.duration;
      k.maxMs = Math.max(k.maxMs, e.duration);
      if (e.duration > 1) k.over1Ms += 1;
    }
  }).observe({ entryTypes: ['gc'] });
  return byKind;
}
