// Peer: vLLM's own router (vllm-router 0.1.17, cache_aware and round_robin) and kvroute (its
// default policy, following the engines' KV events) in front of the same two real vLLM engines
// (the CPU build, bench/engines/), on the same prefix-heavy workload, same client, alternating
// rounds. Each round starts from cold caches (/reset_prefix_cache on both engines) and a fresh
// router process, and is judged by the engines' own prefix-cache counters.
import { compilePackage } from '../../lib/compiled.js';
import type { BenchContext, BenchSuite, SuiteResult } from '../../lib/suite.js';
import { installEngines } from '../../engines/install.js';
import { buildModel } from '../../engines/model.js';
import { routerConfig, startKvrouteProcess } from '../../engines/kvroute-process.js';
import { startVllm, type VllmEngine } from '../../engines/vllm-engine.js';
import { installVllmRouter, VLLM_ROUTER_VERSION } from '../vllm-router/install.js';
import { startVllmRouter, type VllmRouterPolicy } from '../vllm-router/router.js';
import { vllmRouterReport, type ContenderRound } from '../vllm-router/report.js';
import { buildPrefixPrompts, FULL, QUICK, runRound } from '../vllm-router/workload.js';
import { freePort } from '../smg/smg-router.js';
import { request } from 'undici';
import { sampleSum } from '../../engines/prometheus.js';

const MODEL = 'kvroute-tiny-qwen2';
const BLOCK = 32;

interface Prepared {
  python: string;
  modelDir: string;
  vllmRouter: string;
}

type Contender = { name: string; start(workers: readonly string[], engines: readonly VllmEngine[]): Promise<{ url: string; close(): Promise<void> }> };

async function counters(engines: readonly VllmEngine[]): Promise<{ hits: number; queries: number }> {
  let hits = 0;
  let queries = 0;
  for (const e of engines) {
    const m = await e.metrics();
    hits += sampleSum(m, 'vllm:prefix_cache_hits_total');
    queries += sampleSum(m, 'vllm:prefix_cache_queries_total');
  }
  return { hits, queries };
}

/** Until both engines are candidates of the router (their event streams joined), as a user would wait on /health. */
async function kvrouteReady(url: string, engines: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await request(`${url}/v1/route`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'ready?' }),
    });
    const e = (await res.body.json()) as { decode?: { candidates?: unknown[] } };
    if ((e.decode?.candidates?.length ?? 0) === engines) return;
    if (Date.now() > deadline) throw new Error('kvroute did not see both engines in 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function run(ctx: BenchContext, prepared: unknown): Promise<SuiteResult> {
  const p = prepared as Prepared;
  const w = ctx.quick ? QUICK : FULL;
  const roundsEach = ctx.quick ? 1 : 2;
  ctx.progress(`building ${w.requests} prompts: ${w.prefixes} shared ${w.prefixTokens}-token prefixes + ${w.suffixTokens}-token suffixes`);
  const prompts = await buildPrefixPrompts(p.modelDir, w);
  const engines: VllmEngine[] = [];
  try {
    const ports: Array<{ port: number; eventsPort: number; replayPort: number }> = [];
    for (let i = 0; i < 2; i++) ports.push({ port: await freePort(), eventsPort: await freePort(), replayPort: await freePort() });
    for (const [i, pt] of ports.entries())
      engines.push(
        await startVllm({
          python: p.python,
          model: p.modelDir,
          servedName: MODEL,
          blockSize: BLOCK,
          name: `peer-engine-${i + 1}`,
          cpus: String(i),
          log: ctx.progress,
          ...pt,
        }),
      );
    const urls = engines.map((e) => e.url);
    const kvWorkers = engines.map((e, i) => ({ id: i + 1, url: e.url, eventsPort: ports[i].eventsPort, replayPort: ports[i].replayPort }));
    const vr = (policy: VllmRouterPolicy): Contender => ({
      name: `vllm-router ${policy}`,
      start: (ws) => startVllmRouter({ bin: p.vllmRouter, policy, workers: ws, model: MODEL }),
    });
    const contenders: Contender[] = [
      {
        name: 'kvroute (default policy)',
        start: async () => {
          const k = await startKvrouteProcess(
            'peer-kvroute',
            routerConfig({ port: 0, model: MODEL, tokenizer: p.modelDir, blockSize: BLOCK, workers: kvWorkers }),
          );
          await kvrouteReady(k.url, engines.length);
          return { url: k.url, close: () => k.kill() };
        },
      },
      vr('cache_aware'),
      vr('round_robin'),
    ];
    const rounds: ContenderRound[] = [];
    for (let r = 0; r < roundsEach; r++) {
      for (const c of r % 2 === 0 ? contenders : [...contenders].reverse()) {
        for (const e of engines) await (await request(`${e.url}/reset_prefix_cache`, { method: 'POST' })).body.dump();
        const router = await c.start(urls, engines);
        try {
          // The router's readiness probes went through the engines: count from here.
          const before = await counters(engines);
          ctx.progress(`round ${r + 1}: ${c.name}, ${w.requests} requests at ${w.ratePerSecond}/s`);
          const { samples, seconds } = await runRound(router.url, MODEL, prompts, w);
          await new Promise((res) => setTimeout(res, 500));
          const after = await counters(engines);
          rounds.push({ contender: c.name, round: r + 1, samples, seconds, hits: after.hits - before.hits, queries: after.queries - before.queries });
          const ok = samples.filter((s) => s.status === 200).length;
          ctx.progress(`  ${ok}/${samples.length} served, hit rate ${(((after.hits - before.hits) / (after.queries - before.queries)) * 100).toFixed(1)}%`);
        } finally {
          await router.close();
        }
      }
    }
    return vllmRouterReport({ version: VLLM_ROUTER_VERSION, workload: w, engines: engines.length, blockSize: BLOCK, rounds });
  } finally {
    await Promise.all(engines.map((e) => e.stop()));
  }
}

export const suite: BenchSuite = {
  name: 'vllm-router',
  title: `Peer: vllm-router ${VLLM_ROUTER_VERSION} and kvroute in front of the same two real vLLM engines (CPU build), prefix-heavy workload`,
  order: 40,
  async prepare(ctx): Promise<Prepared> {
    await compilePackage(ctx.progress);
    const install = await installEngines(ctx.progress);
    return { python: install.python, modelDir: await buildModel(install.python, ctx.progress), vllmRouter: await installVllmRouter(ctx.progress) };
  },
  run,
};
