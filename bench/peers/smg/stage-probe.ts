// Where a routed request's added latency goes (issue 14): the smg-frontend suite's world, prompts
// and router process, open loop at its steady 500 req/s, rounds rotating direct / routed runs of
// text and token-id prompts. Each request is traced: the load generator's send and done times, the
// router's uWS entry, body complete, engine call created and written, engine head read, client
// response ended (router-stages.mjs), all on the machine's monotonic clock, and the router's GC
// pauses on the same clock. A request's time splits into the router's own code (body complete ->
// engine request written, engine head read -> response ended) and the rest (client -> router
// handler, the engine leg, router -> client: the kernel, the engine, and waits for a CPU or for
// the router's event loop). Bench-only: the router runs with the probe's subscribers on.
//
//   npx tsx bench/peers/smg/stage-probe.ts [--rounds 6] [--requests 2500] [--fixed-order] [--ids-first] [--warmup 1000] [--out probe.json]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { percentile, sorted } from '../../lib/stats.js';
import { STEADY_RATE, STEADY_WARMUP_REQUESTS, rotated, steadyOrder } from './compare.js';
import { startKvroute, type RouterStages } from './kvroute-router.js';
import { routerNodeFlags } from './router-flags.js';
import { attribute, type StageRow } from './stage-split.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    requests: { type: 'string', default: '2500' },
    out: { type: 'string' },
    'ids-first': { type: 'boolean', default: false },
    'fixed-order': { type: 'boolean', default: false },
    warmup: { type: 'string', default: String(STEADY_WARMUP_REQUESTS) },
  },
});
const warmup = Number(values.warmup);
if (!Number.isInteger(warmup) || warmup < 0) throw new RangeError('--warmup must be a whole number >= 0');
const rounds = Number(values.rounds);
const requests = Number(values.requests);
if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(requests) || requests < 100)
  throw new RangeError('--rounds >= 1 and --requests >= 100, whole numbers');

const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const router = await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags: routerNodeFlags(), stages: true });
type Form = keyof typeof bodies;
// The suite's order (steadyOrder, compare.ts) unless --fixed-order: rotated rounds in one cyclic
// order, as the suite ran them before, where the routed text run always follows the direct runs
// (the router idle for 10 s) and the routed ids run always follows it; --ids-first swaps the
// forms, --warmup 0 leaves out the warm-up.
const forms: Form[] = values['ids-first'] ? ['ids', 'text'] : ['text', 'ids'];
const runs: Array<{ name: string; form: Form; routed: boolean }> = [
  ...forms.map((form) => ({ name: `direct-${form}`, form, routed: false })),
  ...forms.map((form) => ({ name: form, form, routed: true })),
];
const open = (url: string, form: Form, n: number, trace?: string) =>
  world.load(
    {
      url,
      path: '/v1/completions',
      body: bodies[form][0],
      bodies: bodies[form],
      concurrency: 32,
      requests: n,
      maxMs: n * 2 + 10_000,
      ratePerS: STEADY_RATE,
      ...(trace ? { trace } : {}),
    },
    { ownThread: false },
  );
const rows: Record<string, StageRow[]> = { text: [], ids: [] };
const gcByForm: Record<string, number[]> = { text: [], ids: [] };
const connectsByForm: Record<string, number[]> = { text: [], ids: [] };
const totals: Record<string, Float64Array[]> = Object.fromEntries(runs.map((r) => [r.name, []]));
let threads: string[] = [];
let gcFields: readonly string[] = [];
try {
  for (const r of runs) await open(r.routed ? router.url : world.engineUrl, r.form, 1_000);
  await router.stages();
  for (let round = 0; round < rounds; round++) {
    for (const r of values['fixed-order'] ? rotated(runs, round) : steadyOrder(runs, round)) {
      // As the suite: a routed run starts on a router that just served this load (--warmup 0: cold after idle).
      if (r.routed && warmup > 0) {
        await open(router.url, r.form, warmup);
        await router.stages(); // the warm-up's GC pauses are not the run's
      }
      const trace = `${r.name}.${round}.`;
      const res = await open(r.routed ? router.url : world.engineUrl, r.form, requests, trace);
      totals[r.name].push(res.latenciesMs);
      if (!r.routed) continue;
      const seen: RouterStages = await router.stages();
      threads = seen.threads;
      gcFields = seen.gcFields;
      gcByForm[r.form].push(...seen.gc);
      connectsByForm[r.form].push(...seen.connects);
      const t = res.trace!;
      const width = seen.fields.length;
      for (let i = 0; i < t.sentNs.length && (i + 1) * width <= seen.rows.length; i++) {
        if (Number.isNaN(t.doneNs[i])) continue;
        const row: Record<string, number> = { round, sent: t.sentNs[i], done: t.doneNs[i] };
        seen.fields.forEach((f, k) => (row[f] = seen.rows[i * width + k] ?? Number.NaN));
        rows[r.form].push(row as unknown as StageRow);
      }
    }
    log(`round ${round + 1}/${rounds} done`);
  }
} finally {
  await router.close();
  await world.close();
}

const ms = (x: number) => Math.round(x * 1000) / 1000;
for (const form of ['text', 'ids'] as const) {
  const added = Array.from({ length: rounds }, (_, i) => percentile(totals[form][i], 99) - percentile(totals[`direct-${form}`][i], 99));
  console.log(
    `\n## ${form}: ${rows[form].length} requests traced; added p99 per round ${added.map(ms).join(', ')} ms (median ${ms(percentile(sorted(added), 50))})`,
  );
  const a = attribute(rows[form], gcByForm[form], gcFields.length);
  console.log('| stage | p50 (ms) | p99 | p99.9 | mean in the slowest 1% | excess over the median request |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const s of a.stages) console.log(`| ${s.name} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.p999)} | ${ms(s.tailMean)} | ${ms(s.tailMean - s.p50)} |`);
  console.log(gcSummary(gcByForm[form], gcFields));
  const slowStart = rows[form].filter((x) => (x.headers - x.create) / 1e6 > 0.2);
  const c = connectsByForm[form];
  const duringConnect = slowStart.filter((x) => c.some((t, i) => i % 2 === 1 && t >= x.create && t <= x.headers)).length;
  console.log(
    `new engine connections: ${c.length / 2}; requests whose engine call waited > 0.2 ms before its head was built: ${slowStart.length}, ${duringConnect} of them with a new connection made meanwhile`,
  );
  console.log(
    `slowest 1% (${a.tailCount} requests, total >= ${ms(a.tailFrom)} ms): ${a.tailWithGc} overlap a router GC pause (all requests: ${a.allWithGc} of ${rows[form].length}); router GC pauses ${a.gcCount} (${ms(a.gcTotalMs)} ms, longest ${ms(a.gcMaxMs)} ms)`,
  );
}
/** Pauses per perf_hooks kind (1 scavenge, 4 mark-compact, 8 incremental marking step), and the young generation's capacity seen after scavenges. */
function gcSummary(gc: readonly number[], fields: readonly string[]): string {
  const w = fields.length;
  const col = (name: string) => fields.indexOf(name);
  const kinds: Record<number, { n: number; ms: number }> = {};
  const capacities: number[] = [];
  for (let i = 0; i + w <= gc.length; i += w) {
    const k = gc[i + col('kind')];
    (kinds[k] ??= { n: 0, ms: 0 }).n++;
    kinds[k].ms += gc[i + col('durationNs')] / 1e6;
    if (k === 1) capacities.push(gc[i + col('youngCapacity')] / 1024);
  }
  const cap = sorted(capacities);
  return `router GC by kind: ${Object.entries(kinds)
    .map(([k, v]) => `kind ${k}: ${v.n} (${ms(v.ms)} ms)`)
    .join(
      ', ',
    )}; young generation capacity after scavenges (KB): min ${Math.round(cap[0] ?? 0)}, median ${Math.round(percentile(cap, 50))}, max ${Math.round(cap[cap.length - 1] ?? 0)}`;
}
console.log(`\nrouter threads at the end (${threads.length}): ${threads.join(', ')}`);
if (values.out)
  writeFileSync(
    values.out,
    JSON.stringify({
      at: new Date().toISOString(),
      rounds,
      requests,
      rows,
      gcFields,
      gcByForm,
      connectsByForm,
      totals: Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v.map((x) => Array.from(x))])),
      threads,
    }),
  );
