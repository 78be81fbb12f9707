// Does the kvroute router slow down as it serves? One router in front of the SMG suite's world,
// closed-loop rounds of 10,000 requests (text, then token ids) one after another on the same
// process, each round's router CPU per request with its GC pauses so far (counts and total ms per
// kind: 1 scavenge, 4 mark-compact). Found with it (2026-11-28): the router's first mark-compact,
// after ~60k requests here, turns it from ~0.5 MB to ~1.6 MB surviving each scavenge, nearly all
// promoted, for good: +30-50 us of router CPU per request (bench/PERFORMANCE.md, "The router after
// its first full GC").
//   npx tsx bench/peers/smg/router-drift.ts [both|text|ids] [rounds]
// KVROUTE_BENCH_ROUTER_FLAGS sets the router's node flags (router-flags.ts).
import { readFileSync } from 'node:fs';
import { measureThroughput, type Contender } from './compare.js';
import { startKvroute } from './kvroute-router.js';
import { routerNodeFlags } from './router-flags.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const forms = process.argv[2] ?? 'both';
if (!['both', 'text', 'ids'].includes(forms)) throw new RangeError(`forms must be both, text or ids, got ${forms}`);
const rounds = Number(process.argv[3] ?? 8);
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`rounds must be a positive integer, got ${process.argv[3]}`);

const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const kv = await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags: routerNodeFlags(), gcStats: true });
try {
  const contenders: Contender[] = [];
  if (forms !== 'ids') contenders.push({ name: 'text', url: kv.url, pid: kv.pid, bodies: bodies.text, direct: 'direct-text' });
  if (forms !== 'text') contenders.push({ name: 'ids', url: kv.url, pid: kv.pid, bodies: bodies.ids, direct: 'direct-ids' });
  const rssKb = () => /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${kv.pid}/status`, 'utf8'))?.[1];
  for (let r = 0; r < rounds; r++) {
    const sizes = { rounds: 1, closedRequests: 10_000, warmupRequests: r === 0 ? 3_000 : 0, overheadRounds: 0, overheadRequests: 0 };
    await measureThroughput(world, contenders, sizes, (line) => log(`pass ${r + 1}: ${line}`));
    const gc = await kv.gcStats();
    const kinds = Object.entries(gc).map(([kind, s]) => `kind ${kind}: ${s.count} pauses, ${Math.round(s.totalMs)} ms`);
    log(`pass ${r + 1}: router RSS ${rssKb()} kB; GC so far ${kinds.join('; ')}`);
  }
} finally {
  await kv.close();
  await world.close();
}
