// What tracing costs the router: one router process per setting (tracing off, on with 1% of
// traces sampled, on with all sampled), all of this build and in front of the same world (the
// smg-frontend suite's engines, prompts and router process; no SMG), spans exported over
// OTLP/HTTP protobuf to a sink on loopback that reads and drops them. With --base, a router of
// another build (tracing off; prepared as router-ab.ts's header says) runs beside them: the
// hot path's cost before and after. The runs of every round go in rotating order, so the shared
// machine's noise falls on all of them alike. Per router: router CPU per request and req/s in a
// closed loop, added latency p50/p99 at a steady 500 req/s over the direct path (median of rounds).
//
//   npm run build:ts && npx tsx bench/peers/smg/tracing-series.ts [--base /tmp/kvroute-base] \
//     [--rounds 4] [--requests 2000] [--closed-rounds 3] [--form text|ids] [--out series.json]
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { measureAddedLatency, measureThroughput, type Contender } from './compare.js';
import { startKvroute, type RunningKvroute } from './kvroute-router.js';
import { summarizeThroughput } from './report.js';
import { routerNodeFlags } from './router-flags.js';
import { MODEL, stampedLog as log, startScriptWorkload } from './workload.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    requests: { type: 'string', default: '2000' },
    'closed-rounds': { type: 'string', default: '3' },
    form: { type: 'string', default: 'text' },
    out: { type: 'string' },
  },
});
const count = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a whole number >= 1, not ${JSON.stringify(text)}`);
  return n;
};
if (values.form !== 'text' && values.form !== 'ids') throw new RangeError(`--form takes text or ids, not ${JSON.stringify(values.form)}`);
const sizes = {
  overheadRounds: count('rounds', values.rounds),
  overheadRequests: count('requests', values.requests),
  rounds: count('closed-rounds', values['closed-rounds']),
  closedRequests: 4_000,
  warmupRequests: 2_000,
};

/** An OTLP/HTTP receiver that reads each export and answers 200: the exporter's real work, nothing kept. */
async function startSink(): Promise<{ url: string; exports: () => number; bytes: () => number; close(): Promise<void> }> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    exports: () => exports,
    bytes: () => bytes,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const sink = await startSink();
const settings: Array<{ name: string; config?: Record<string, unknown>; script?: URL }> = [
  ...(values.base
    ? [{ name: 'base build, tracing off', script: pathToFileURL(join(resolve(values.base), 'bench/peers/smg/kvroute-router-process.mjs')) }]
    : []),
  { name: 'tracing off' },
  { name: 'tracing 1%', config: { tracing: { enabled: true, endpoint: sink.url, sampleRatio: 0.01 } } },
  { name: 'tracing 100%', config: { tracing: { enabled: true, endpoint: sink.url, sampleRatio: 1 } } },
];
const { tokenizerDir, bodies, world } = await startScriptWorkload(log);
const formBodies = values.form === 'text' ? bodies.text : bodies.ids;
const routers: RunningKvroute[] = [];
try {
  for (const s of settings)
    routers.push(
      await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags: routerNodeFlags(), processScript: s.script, config: s.config }),
    );
  const contenders: Contender[] = routers.map((r, i) => ({ name: settings[i].name, url: r.url, pid: r.pid, bodies: formBodies, direct: 'direct' }));
  const directs = [{ name: 'direct', url: world.engineUrl, bodies: formBodies }];
  const throughput = await measureThroughput(world, contenders, sizes, log);
  const added = await measureAddedLatency(world, contenders, directs, sizes, log);
  console.log(`\nprompt form ${values.form}; OTLP sink: ${sink.exports()} exports, ${Math.round(sink.bytes() / 1024)} KiB`);
  console.log('\n| router | CPU us/req closed (median) | rounds | req/s | added p50 / p99 at 500/s (ms) | added p99 per round (ms) | CPU us/req at 500/s |');
  console.log('|---|---|---|---|---|---|---|');
  for (const c of contenders) {
    const t = summarizeThroughput(throughput[c.name]);
    const a = added[c.name];
    console.log(
      `| ${c.name} | ${t.cpuUsPerRequest.toFixed(1)} | ${t.roundsCpu.map((x) => Math.round(x)).join(', ')} | ${Math.round(t.rps)} | ${a.overhead_p50_ms} / ${a.overhead_p99_ms} | ${a.round_overhead_p99_ms.join(', ')} | ${a.cpu_us_per_request ?? '?'} |`,
    );
  }
  if (values.out)
    writeFileSync(
      values.out,
      JSON.stringify(
        {
          at: new Date().toISOString(),
          sizes,
          form: values.form,
          settings: settings.map((s) => s.name),
          added,
          throughput,
          sink: { exports: sink.exports(), bytes: sink.bytes() },
        },
        null,
        2,
      ),
    );
} finally {
  for (const r of routers) await r.close();
  await world.close();
  await sink.close();
}
