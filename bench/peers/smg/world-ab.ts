// Layouts of the bench world side by side (issue 14): each layout (world-process.ts's WorldLayout:
// the engines on the main thread or on threads of their own, the load generator's HTTP client) gets
// a world process of its own with SMG and a kvroute router in front of its engines, and the
// smg-frontend suite's closed-loop rounds run over every (layout, router) pair in rotating order,
// so the shared machine's noise falls on all alike. Per pair: median req/s, router and world CPU
// per request, and each thread's share of a core (the world's engines and load generator, the
// router's main thread): which thread bounds the rounds.
//
//   npx tsx bench/peers/smg/world-ab.ts [--layouts main/request/per-run,main/request,main/dispatch,threads/dispatch] [--rounds 4] [--requests 10000]
import { parseArgs } from 'node:util';
import type { LoadClient } from '../../frontend/loadgen.js';
import { startWorld, type World, type WorldLayout } from '../../frontend/world-process.js';
import { median } from '../../lib/stats.js';
import { measureThroughput, type Contender, type RoundThreads, type ThroughputRound } from './compare.js';
import type { RoleShare } from '../../frontend/thread-shares.js';
import { installSmg } from './install.js';
import { startKvroute } from './kvroute-router.js';
import { routerNodeFlags } from './router-flags.js';
import { startSmg } from './smg-router.js';
import { ENGINES, MODEL, OUTPUT_TOKENS, stampedLog as log, startScriptWorkload } from './workload.js';

const { values } = parseArgs({
  options: {
    layouts: { type: 'string', default: 'main/request/per-run,main/request,main/dispatch,threads/dispatch' },
    rounds: { type: 'string', default: '4' },
    requests: { type: 'string', default: '10000' },
  },
});
const count = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a whole number >= 1, not ${JSON.stringify(text)}`);
  return n;
};
/**
 * "main/request": engines on the main thread, undici's request(); "threads/dispatch": engine
 * threads, dispatch; a "/per-run" tail: a load thread started per run (the world before 2026-11-28).
 */
function parseLayout(text: string): WorldLayout {
  const [engines, client, perRun, ...rest] = text.split('/');
  if (
    (engines !== 'main' && engines !== 'threads') ||
    (client !== 'request' && client !== 'dispatch') ||
    (perRun !== undefined && perRun !== 'per-run') ||
    rest.length > 0
  ) {
    throw new RangeError(`a layout is (main|threads)/(request|dispatch)[/per-run], not ${JSON.stringify(text)}`);
  }
  return { engineThreads: engines === 'threads', loadClient: client as LoadClient, loadThreadPerRun: perRun === 'per-run' };
}
const layouts = values.layouts.split(',').map((t) => ({ name: t, layout: parseLayout(t) }));
const sizes = {
  rounds: count('rounds', values.rounds),
  closedRequests: count('requests', values.requests),
  warmupRequests: 3_000,
  overheadRounds: 0,
  overheadRequests: 0,
};

const smgBin = await installSmg(log);
const { tokenizerDir, bodies, world: spare } = await startScriptWorkload(log);
await spare.close(); // each layout starts its own
const closing: Array<() => Promise<void>> = [];
try {
  const contenders: Contender[] = [];
  let first: World | undefined;
  for (const { name, layout } of layouts) {
    const world = await startWorld(OUTPUT_TOKENS, 64, ENGINES, layout);
    closing.unshift(() => world.close());
    first ??= world;
    const smg = await startSmg({ smg: smgBin, tokenizerDir, model: MODEL, workers: world.engineUrls, log });
    closing.unshift(() => smg.close());
    const kv = await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags: routerNodeFlags() });
    closing.unshift(() => kv.close());
    log(
      `layout ${name}: world pid ${world.pid} (engine threads ${world.threads.engine.join(', ')}, load thread ${world.threads.load.join(', ')}), smg pid ${smg.pid}, kvroute pid ${kv.pid}`,
    );
    contenders.push(
      { name: `${name} smg-text`, url: smg.url, pid: smg.pid, bodies: bodies.text, direct: '', world },
      { name: `${name} kvroute-text`, url: kv.url, pid: kv.pid, bodies: bodies.text, direct: '', world },
      { name: `${name} kvroute-ids`, url: kv.url, pid: kv.pid, bodies: bodies.ids, direct: '', world },
    );
  }
  const rounds = await measureThroughput(first!, contenders, sizes, log);
  const med = (rs: readonly ThroughputRound[], f: (r: ThroughputRound) => number | undefined) => median(rs.map((r) => f(r) ?? Number.NaN));
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  // A role's median share of a core and its median wait for one.
  const role = (rs: readonly ThroughputRound[], f: (r: RoundThreads) => RoleShare) =>
    `${pct(med(rs, (r) => r.threads && f(r.threads).share))} +${pct(med(rs, (r) => r.threads && f(r.threads).waiting))}`;
  console.log('\nShares of one core, medians of rounds; "+x" the share of the round a role\'s threads waited for a core.');
  console.log(
    '\n| layout | router | req/s | router CPU (us) | world CPU (us) | machine idle | world engine threads | world load thread | world other | router main | router other (busiest) | failed |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of contenders) {
    const rs = rounds[c.name];
    const [layout, router] = c.name.split(' ');
    console.log(
      `| ${layout} | ${router} | ${Math.round(med(rs, (r) => r.rps))} | ${med(rs, (r) => r.cpuUsPerRequest).toFixed(1)} | ${med(rs, (r) => r.machine?.worldUsPerRequest).toFixed(1)} | ${pct(med(rs, (r) => r.machine?.idleShare))} | ${role(rs, (t) => t.world.engine)} (busiest ${pct(med(rs, (r) => r.threads?.world.engine.busiest))}) | ${role(rs, (t) => t.world.load)} | ${role(rs, (t) => t.world.other)} | ${role(rs, (t) => t.router.main)} | ${role(rs, (t) => t.router.other)} (${pct(med(rs, (r) => r.threads?.router.other.busiest))}) | ${rs.reduce((n, r) => n + r.failed, 0)} |`,
    );
  }
} finally {
  for (const close of closing) await close();
}
