// The real-engine suite's fleet: vLLM's CPU build installed once (bench/engines/install.ts), the
// tiny Qwen2 model (bench/engines/model.ts), two vLLM engines on loopback with prefix caching and KV
// events, and kvroute (dist/cli.js serve) in front. Plus what the checks measure with: the engines'
// own prefix-cache counters, and kvroute's claims.
import { request } from 'undici';
import { installEngines, type EnginesInstall } from '../../bench/engines/install.js';
import { buildModel } from '../../bench/engines/model.js';
import { routerConfig, startKvrouteProcess, type EngineWorker, type KvrouteProcess } from '../../bench/engines/kvroute-process.js';
import { sampleSum } from '../../bench/engines/prometheus.js';
import { startVllm, type VllmEngine } from '../../bench/engines/vllm-engine.js';
import { freePort } from '../../bench/peers/smg/smg-router.js';

export const MODEL = 'kvroute-tiny-qwen2';
export const BLOCK = 32;

/**
 * vLLM's NixlConnector on the CPU (KV in host memory, NIXL 1.5.1's UCX backend), both roles: the
 * engines serve aggregated requests as usual and either can prefill for the other.
 */
function nixlConnector(sideChannelPort: number): { extraArgs: string[]; env: NodeJS.ProcessEnv } {
  return {
    extraArgs: ['--kv-transfer-config', JSON.stringify({ kv_connector: 'NixlConnector', kv_role: 'kv_both', kv_buffer_device: 'cpu' })],
    env: { VLLM_NIXL_SIDE_CHANNEL_HOST: '127.0.0.1', VLLM_NIXL_SIDE_CHANNEL_PORT: String(sideChannelPort) },
  };
}

export interface Fleet {
  install: EnginesInstall;
  modelDir: string;
  engines: VllmEngine[];
  workers: EngineWorker[];
  router: KvrouteProcess;
  /** Another kvroute in front of the same engines (its own config; roles per engine, default aggregated). */
  startRouter(name: string, extra?: Record<string, unknown>, args?: readonly string[], roles?: readonly EngineWorker['role'][]): Promise<KvrouteProcess>;
  close(): Promise<void>;
}

export function log(line: string): void {
  process.stderr.write(`[engines ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

export async function startFleet(): Promise<Fleet> {
  const install = await installEngines(log);
  log(
    `vLLM venv: ${install.venv} (${install.fresh ? 'installed now' : `installed ${install.installedAt}`}: ${install.installSeconds} s, ${(install.downloadBytes / 1e9).toFixed(2)} GB downloaded)`,
  );
  const modelDir = await buildModel(install.python, log);
  const engines: VllmEngine[] = [];
  const routers: KvrouteProcess[] = [];
  const close = async () => {
    await Promise.all(routers.map((r) => r.kill()));
    await Promise.all(engines.map((e) => e.stop()));
  };
  try {
    const ports: Array<{ port: number; eventsPort: number; replayPort: number; sideChannelPort: number }> = [];
    for (let i = 0; i < 2; i++)
      ports.push({ port: await freePort(), eventsPort: await freePort(), replayPort: await freePort(), sideChannelPort: await freePort() });
    // One at a time: two engines starting at once on two shared cores take longer than in turn.
    for (const [i, { sideChannelPort, ...p }] of ports.entries()) {
      engines.push(
        await startVllm({
          python: install.python,
          model: modelDir,
          servedName: MODEL,
          blockSize: BLOCK,
          name: `engine-${i + 1}`,
          cpus: String(i),
          log,
          ...p,
          ...nixlConnector(sideChannelPort),
        }),
      );
    }
    const workers: EngineWorker[] = engines.map((e, i) => ({ id: i + 1, url: e.url, eventsPort: ports[i].eventsPort, replayPort: ports[i].replayPort }));
    const startRouter = async (name: string, extra?: Record<string, unknown>, args: readonly string[] = [], roles?: readonly EngineWorker['role'][]) => {
      const config = routerConfig({
        port: 0,
        model: MODEL,
        tokenizer: modelDir,
        blockSize: BLOCK,
        workers: workers.map((w, i) => ({ ...w, role: roles?.[i] ?? w.role })),
        extra,
      });
      const r = await startKvrouteProcess(name, config, args);
      routers.push(r);
      return r;
    };
    const router = await startRouter('kvroute');
    log(`kvroute ${router.url} (pid ${router.pid}) routes to ${engines.map((e) => e.url).join(', ')}`);
    return { install, modelDir, engines, workers, router, startRouter, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** An engine's prefix-cache counters (vLLM's own). */
export interface CacheCounters {
  hits: number;
  queries: number;
}

export async function cacheCounters(e: VllmEngine): Promise<CacheCounters> {
  const m = await e.metrics();
  return { hits: sampleSum(m, 'vllm:prefix_cache_hits_total'), queries: sampleSum(m, 'vllm:prefix_cache_queries_total') };
}

export async function allCounters(engines: readonly VllmEngine[]): Promise<CacheCounters[]> {
  return Promise.all(engines.map(cacheCounters));
}

export function deltas(before: readonly CacheCounters[], after: readonly CacheCounters[]): CacheCounters[] {
  return after.map((a, i) => ({ hits: a.hits - before[i].hits, queries: a.queries - before[i].queries }));
}

/** POST /v1/route on a router: what it would do with `body`, booking nothing. */
export async function explain(
  routerUrl: string,
  body: object,
): Promise<{ worker: number; overlap: number; candidates: Array<{ worker: number; overlap_blocks: number }> }> {
  const res = await request(`${routerUrl}/v1/route`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`POST /v1/route: ${res.statusCode} ${text}`);
  const e = JSON.parse(text) as { decode: { worker: number; overlap_blocks: number; candidates: Array<{ worker: number; overlap_blocks: number }> } };
  return { worker: e.decode.worker, overlap: e.decode.overlap_blocks, candidates: e.decode.candidates };
}

/** Polls `probe` every 100 ms until it returns true, or throws after `ms`. */
export async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
