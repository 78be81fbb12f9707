// Does the kvroute router slow down as it serves? One router in front of the SMG suite's world,
// closed-loop rounds of 10,000 requests (text, then token ids) one after another on the same
// process, each round's router CPU per request with its GC pauses so far (counts and total ms per
// kind: 1 scavenge, 4 mark-compact) and, from the router's --trace-gc-nvp, what each scavenge of
// the pass found alive and promoted. Found with it (2026-11-28): the router's first mark-compact,
// after ~60k requests here, turns it from ~0.5 MB to ~1.6 MB surviving each scavenge, nearly all
// promoted, for good: +30-50 us of router CPU per request (bench/PERFORMANCE.md, "The router after
// its first full GC").
//   npx tsx bench/peers/smg/router-drift.ts [both|text|ids] [rounds] [--full-gc-after=N] [--replicas] [--queue=X]
// --full-gc-after=N forces a full GC in the router after pass N (the first one otherwise comes
// after ~60k requests). --replicas runs it as a replica (a nats-server of its own, no sibling):
// its bookings are held and announced. --queue=X turns its router queue on at threshold X
// (routerQueue.threshold, in max_num_batched_tokens of 8192) with the events-mode indexer: the
// engines publish no KV events, so every prompt books its 1,024 tokens and the queue engages
// (under the approximate indexer the suite's 256 prompts are soon all cached and book nothing).
// KVROUTE_BENCH_ROUTER_FLAGS sets the router's node flags (router-flags.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchNats, type BenchNats } from '../../replicas/nats-server.js';
import { measureThroughput, type Contender } from './compare.js';
import { formatStretch, GcTrace } from './gc-trace.js';
import { startKvroute } from './kvroute-router.js';
import { routerNodeFlags } from './router-flags.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const args = parseArgs({ allowPositionals: true, options: { 'full-gc-after': { type: 'string' }, replicas: { type: 'boolean' }, queue: { type: 'string' } } });
const forms = args.positionals[0] ?? 'both';
if (!['both', 'text', 'ids'].includes(forms)) throw new RangeError(`forms must be both, text or ids, got ${forms}`);
const rounds = Number(args.positionals[1] ?? 8);
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`rounds must be a positive integer, got ${args.positionals[1]}`);
const fullGcAfter = Number(args.values['full-gc-after'] ?? 0);
if (!Number.isInteger(fullGcAfter) || fullGcAfter < 0)
  throw new RangeError(`--full-gc-after must be a pass number (0: never), got ${args.values['full-gc-after']}`);
const queue = args.values.queue === undefined ? undefined : Number(args.values.queue);
if (queue !== undefined && !(queue >= 0)) throw new RangeError(`--queue must be a threshold >= 0, got ${args.values.queue}`);

const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const nats: BenchNats | undefined = args.values.replicas ? await startBenchNats() : undefined;
const config: Record<string, unknown> = {};
if (nats) config.replicas = { nats: nats.url, warmStart: false, snapshotIntervalMs: 0 };
if (queue !== undefined) Object.assign(config, { routerQueue: { threshold: queue }, indexerMode: 'events' });
const traceDir = mkdtempSync(join(tmpdir(), 'kvroute-drift-'));
const traceGcFile = join(traceDir, 'router-gc.nvp');
const kv = await startKvroute({
  tokenizerDir,
  model: MODEL,
  workers: world.engineUrls,
  nodeFlags: routerNodeFlags(),
  gcStats: true,
  forcibleGc: fullGcAfter > 0,
  traceGcFile,
  config,
});
try {
  log(
    `router: ${nats ? 'a replica (NATS)' : 'alone'}, ${queue === undefined ? 'no queue' : `queue threshold ${queue}`}${fullGcAfter > 0 ? `, a full GC forced after pass ${fullGcAfter}` : ''}`,
  );
  const contenders: Contender[] = [];
  if (forms !== 'ids') contenders.push({ name: 'text', url: kv.url, pid: kv.pid, bodies: bodies.text, direct: 'direct-text' });
  if (forms !== 'text') contenders.push({ name: 'ids', url: kv.url, pid: kv.pid, bodies: bodies.ids, direct: 'direct-ids' });
  const rssKb = () => /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${kv.pid}/status`, 'utf8'))?.[1];
  const trace = new GcTrace(traceGcFile);
  for (let r = 0; r < rounds; r++) {
    const sizes = { rounds: 1, closedRequests: 10_000, warmupRequests: r === 0 ? 3_000 : 0, overheadRounds: 0, overheadRequests: 0 };
    await measureThroughput(world, contenders, sizes, (line) => log(`pass ${r + 1}: ${line}`));
    const gc = await kv.gcStats();
    const kinds = Object.entries(gc).map(([kind, s]) => `kind ${kind}: ${s.count} pauses, ${Math.round(s.totalMs)} ms`);
    log(`pass ${r + 1}: router RSS ${rssKb()} kB; GC so far ${kinds.join('; ')}`);
    log(`pass ${r + 1}: this pass ${formatStretch(trace.next())}; ${await pathCounts(kv.url)}`);
    if (r + 1 === fullGcAfter) {
      if (!(await kv.fullGc())) throw new Error('the router could not force a GC (no --expose-gc)');
      log(`pass ${r + 1}: full GC forced`);
    }
  }
} finally {
  await kv.close();
  await nats?.close();
  await world.close();
  rmSync(traceDir, { recursive: true, force: true });
}

/** That the path under study was taken: requests that waited in the queue, booking events sent to the replicas. */
async function pathCounts(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (re: RegExp) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  const queued = sum(/^kvroute_router_queue_wait_seconds_count\{[^}]*\} (\S+)$/gm);
  const sent = sum(/^kvroute_replica_events_total\{fate="out"\} (\S+)$/gm);
  return `so far ${queued} requests queued, ${sent} booking events sent to replicas`;
}
