// The live page's decision log on the request path: CPU per booked leg (DecisionLog.leg, one done
// record every second leg), and one read of the latest 20 requests. Run:
//   node --import tsx bench/dashboard/decision-log-cost.ts
import type { RoutingDecision } from '../../src/core/routing-core.js';
import { DecisionLog } from '../../src/server/observability/decision-log.js';
const d = {
  requestId: 'r',
  worker: 1,
  dpRank: 0,
  overlapBlocks: 1,
  lowerTierBlocks: { host: 0, disk: 0, external: 0 },
  promptTokens: 32,
  cachedTokens: 16,
  prefillTokens: 16,
  policy: 'kv',
  candidates: [],
  timingsUs: { hash: 1, match: 1, select: 1, total: 3 },
} as unknown as RoutingDecision;
const log = new DecisionLog();
const N = 2_000_000;
for (let r = 0; r < 5; r++) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    log.leg('decode', d);
    if ((i & 1) === 0) log.done({ at: 0, requestId: 'r', mode: 'aggregated', reason: 'x', outcome: 'end', ttftMs: 1, outputTokens: 1 });
  }
  const c = process.cpuUsage(c0);
  const ns = ((c.user + c.system) * 1000) / N;
  console.log(`leg + half a done: ${ns.toFixed(1)} ns CPU per leg`);
}
const c1 = process.cpuUsage();
for (let i = 0; i < 1000; i++) log.recent(20);
console.log(`recent(20) over 64 legs: ${(((u) => (u.user + u.system) / 1000)(process.cpuUsage(c1))).toFixed(1)} µs CPU`);
