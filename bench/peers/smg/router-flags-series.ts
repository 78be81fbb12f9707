// Node flag sets for the router side by side: one kvroute router process per flag set, all in front
// of the same world (the smg-frontend suite's engines, prompts and router process; no SMG), the
// runs of every round in rotating order so the shared machine's noise falls on all of them alike.
// Per flag set and prompt form: req/s and router CPU per request in a closed loop, added latency
// p50/p99 at a steady 500 req/s (median of rounds), and the router's GC pauses over those rounds.
//
//   npx tsx bench/peers/smg/router-flags-series.ts [--rounds 8] [--requests 2500] \
//     [--closed-rounds 3] [--out series.json] -- '--max-semi-space-size=8' '--max-semi-space-size=8 --single-threaded-gc'
//
// Each argument after -- is one flag set as written on node's command line ('' runs node's defaults).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { measureAddedLatency, measureThroughput, type Contender } from './compare.js';
import { startKvroute, type RouterGcStats, type RunningKvroute } from './kvroute-router.js';
import { summarizeThroughput } from './report.js';
import { parseNodeFlags } from './router-flags.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '8' },
    requests: { type: 'string', default: '2500' },
    'closed-rounds': { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const count = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a whole number >= 1, not ${JSON.stringify(text)}`);
  return n;
};
const sizes = {
  overheadRounds: count('rounds', values.rounds),
  overheadRequests: count('requests', values.requests),
  rounds: count('closed-rounds', values['closed-rounds']),
  closedRequests: 6_000,
  warmupRequests: 2_000,
};
if (positionals.length === 0) throw new RangeError('name at least one flag set, e.g. --max-semi-space-size=8');
const flagSets = positionals.map((p) => parseNodeFlags(p));
const labels = flagSets.map((f, i) => `${String.fromCharCode(65 + i)} [${f.join(' ') || 'no flags'}]`);

/** Pauses between two snapshots of a router's GC stats, per kind. */
function gcDelta(a: RouterGcStats, b: RouterGcStats): RouterGcStats {
  return Object.fromEntries(
    Object.entries(b).map(([kind, s]) => {
      const before = a[kind] ?? { count: 0, totalMs: 0, maxMs: 0, over1Ms: 0 };
      return [
        kind,
        {
          count: s.count - before.count,
          totalMs: Math.round((s.totalMs - before.totalMs) * 10) / 10,
          maxMs: Math.round(s.maxMs * 100) / 100 /* since snapshot a */,
          over1Ms: s.over1Ms - before.over1Ms,
        },
      ];
    }),
  );
}

const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const { text: textBodies, ids: idBodies } = bodies;
const routers: RunningKvroute[] = [];
try {
  for (const nodeFlags of flagSets) routers.push(await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags, gcStats: true }));
  const contenders: Contender[] = routers.flatMap((r, i) => [
    { name: `${labels[i]} text`, url: r.url, pid: r.pid, bodies: textBodies, direct: 'direct-text' },
    { name: `${labels[i]} ids`, url: r.url, pid: r.pid, bodies: idBodies, direct: 'direct-ids' },
  ]);
  const directs = [
    { name: 'direct-text', url: world.engineUrl, bodies: textBodies },
    { name: 'direct-ids', url: world.engineUrl, bodies: idBodies },
  ];
  const throughput = await measureThroughput(world, contenders, sizes, log);
  const gcBefore = await Promise.all(routers.map((r) => r.gcStats()));
  const added = await measureAddedLatency(world, contenders, directs, sizes, log);
  const gc = (await Promise.all(routers.map((r) => r.gcStats()))).map((after, i) => gcDelta(gcBefore[i], after));
  console.log('\n| flags | form | added p50 / p99 (ms) | added p99 per round (ms) | req/s | CPU us/req closed | CPU us/req at 500/s |');
  console.log('|---|---|---|---|---|---|---|');
  for (const c of contenders) {
    const a = added[c.name];
    const t = summarizeThroughput(throughput[c.name]);
    const [label, form] = [c.name.slice(0, c.name.lastIndexOf(' ')), c.name.slice(c.name.lastIndexOf(' ') + 1)];
    console.log(
      `| ${label} | ${form} | ${a.overhead_p50_ms} / ${a.overhead_p99_ms} | ${a.round_overhead_p99_ms.join(', ')} | ${Math.round(t.rps)} | ${Math.round(t.cpuUsPerRequest)} | ${a.cpu_us_per_request ?? '?'} |`,
    );
  }
  console.log('\nGC pauses over the steady-rate rounds (both forms), per kind: count, total ms, max ms, count over 1 ms');
  for (const [i, g] of gc.entries())
    console.log(
      `${labels[i]}: ${Object.entries(g)
        .map(([k, s]) => `kind ${k}: ${s.count}, ${s.totalMs} ms, max ${s.maxMs}, ${s.over1Ms} > 1 ms`)
        .join('; ')}`,
    );
  if (values.out) writeFileSync(values.out, JSON.stringify({ at: new Date().toISOString(), sizes, labels, added, throughput, gc }, null, 2));
} finally {
  for (const r of routers) await r.close();
  await world.close();
}
