// Two builds of the kvroute router side by side: this checkout's dist/ and another build's (a
// copy of the package at the commit compared against), both in front of the same world (the
// smg-frontend suite's engines, prompts and router process; no SMG), closed-loop rounds in
// rotating order so the shared machine's noise falls on both alike. Per build and prompt form: the
// median req/s and router process CPU per request, with every round's figures, and this build's
// CPU per request as a ratio of the other's.
//
//   # the build to compare against, once: its dist/ and native addon beside a copy of the router process script
//   B=/tmp/kvroute-base; mkdir -p $B/bench/peers/smg $B/native && cp -r dist package.json $B/ && cp native/kvroute.node $B/native/ \
//     && cp bench/peers/smg/kvroute-router-process.mjs bench/peers/smg/router-stages.mjs $B/bench/peers/smg/ && ln -s $PWD/node_modules $B/node_modules
//   npx tsx bench/peers/smg/router-ab.ts --base /tmp/kvroute-base [--rounds 5] [--requests 8000] [--forms text,ids]
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { median } from '../../lib/stats.js';
import { measureThroughput, type Contender } from './compare.js';
import { startKvroute, type RunningKvroute } from './kvroute-router.js';
import { routerNodeFlags } from './router-flags.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    requests: { type: 'string', default: '8000' },
    forms: { type: 'string', default: 'text,ids' },
  },
});
const count = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a whole number >= 1, not ${JSON.stringify(text)}`);
  return n;
};
if (!values.base) throw new TypeError('--base DIR is required: a build to compare against (see the header of this file)');
const baseScript = join(resolve(values.base), 'bench/peers/smg/kvroute-router-process.mjs');
if (!existsSync(baseScript) || !existsSync(join(resolve(values.base), 'dist/server/index.js')))
  throw new RangeError(`${values.base} has no dist/ and router process script (see the header of this file)`);
const forms = values.forms.split(',');
for (const f of forms) if (f !== 'text' && f !== 'ids') throw new RangeError(`--forms takes text and ids, not ${JSON.stringify(f)}`);
const sizes = {
  rounds: count('rounds', values.rounds),
  closedRequests: count('requests', values.requests),
  warmupRequests: 3_000,
  overheadRounds: 0,
  overheadRequests: 0,
};

const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const builds: Array<{ name: string; router?: RunningKvroute; script?: URL }> = [{ name: 'base', script: pathToFileURL(baseScript) }, { name: 'this' }];
try {
  for (const b of builds)
    b.router = await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags: routerNodeFlags(), processScript: b.script });
  const contenders: Contender[] = builds.flatMap((b) =>
    forms.map((f) => ({
      name: `${b.name} ${f}`,
      url: b.router!.url,
      pid: b.router!.pid,
      bodies: f === 'text' ? bodies.text : bodies.ids,
      direct: `direct-${f}`,
    })),
  );
  const rounds = await measureThroughput(world, contenders, sizes, log);
  const summary = (name: string) => {
    const r = rounds[name];
    return {
      rps: median(r.map((x) => x.rps)),
      cpu: median(r.map((x) => x.cpuUsPerRequest ?? Number.NaN)),
      failed: r.reduce((n, x) => n + x.failed, 0),
      rounds: r,
    };
  };
  console.log('\n| form | build | req/s (median) | router CPU us/request (median) | rounds (CPU us) | failed |');
  console.log('|---|---|---|---|---|---|');
  for (const f of forms) {
    for (const b of builds) {
      const s = summary(`${b.name} ${f}`);
      console.log(
        `| ${f} | ${b.name} | ${Math.round(s.rps)} | ${s.cpu.toFixed(1)} | ${s.rounds.map((x) => Math.round(x.cpuUsPerRequest ?? Number.NaN)).join(', ')} | ${s.failed} |`,
      );
    }
    const [a, t] = [summary(`base ${f}`), summary(`this ${f}`)];
    console.log(`| ${f} | this / base | ${(t.rps / a.rps).toFixed(3)} | ${(t.cpu / a.cpu).toFixed(3)} | | |`);
  }
} finally {
  for (const b of builds) await b.router?.close();
  await world.close();
}
