// The routing stack against the simulated engines (src/sim: an independent implementation of the
// three handoffs): each PD style end to end, the prefill holds released, cache reports relayed.
import { afterAll, describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore } from '../../src/core/routing-core.js';
import { EngineClients } from '../../src/engines/http-client.js';
import { HttpTransport } from '../../src/engines/http-transport.js';
import type { SseEvent } from '../../src/engines/types.js';
import { KvRouter } from '../../src/routing/kv-router.js';
import { PrefillRouter } from '../../src/routing/prefill-router.js';
import { WorkerPool } from '../../src/routing/worker-pool.js';
import { type SimWorker, startSimWorker } from '../../src/sim/worker/worker.js';
import { collect, request, zeroTotals } from './harness.js';

const ENGINE = { blockSize: 4, kvBlocks: 512, speedup: 1000 } as const;
const workers: SimWorker[] = [];
const clients = new EngineClients();
const transport = new HttpTransport(clients);
afterAll(async () => {
  await clients.close();
  await Promise.all(workers.map((w) => w.close()));
});

let nextId = 1000;
async function fleet(style: 'vllm' | 'sglang' | 'trtllm') {
  const prefill = await startSimWorker({ id: nextId++, role: 'prefill', pdStyle: style, engine: ENGINE });
  const decode = await startSimWorker({ id: nextId++, role: 'decode', pdStyle: style, engine: ENGINE });
  workers.push(prefill, decode);
  const pool = (name: string, roles: Array<'prefill' | 'decode'>) => {
    const core = new RoutingCore(new KvIndexer({ blockSize: 4 }), { blockSize: 4 });
    return new KvRouter({ core, pool: new WorkerPool(name, core, roles), transport });
  };
  const router = new PrefillRouter({ prefill: pool('prefill', ['prefill']), decode: pool('decode', ['decode']) });
  router.prefill.pool.add({
    id: prefill.id,
    role: 'prefill',
    kind: style,
    baseUrl: prefill.url,
    dpSize: 1,
    ...(style === 'sglang' ? { bootstrapHost: prefill.bootstrap!.host, bootstrapPort: prefill.bootstrap!.port } : {}),
  });
  router.decode.pool.add({ id: decode.id, role: 'decode', kind: style, baseUrl: decode.url, dpSize: 1 });
  return { prefill, decode, router };
}

const holds = async (w: SimWorker) => Number(/kvroute_sim_kv_holds\{[^}]*\} (\d+)/.exec(await (await fetch(`${w.url}/metrics`)).text())?.[1] ?? NaN);
const usageOf = (events: SseEvent[]) => events.map((e) => (e.json as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } })?.usage).find(Boolean);

describe.each(['vllm', 'sglang', 'trtllm'] as const)('%s handoff against simulated workers', (style) => {
  it('streams the decode, relays the prefill cache report and releases the prefill hold', async () => {
    const { prefill, router } = await fleet(style);
    const prompt = Array.from({ length: 40 }, (_, i) => 7000 + i);
    const body = { model: 'sim', prompt, max_tokens: 5, ignore_eos: true, stream: true, stream_options: { include_usage: true } };
    const first = await router.handle(request({ body, tokens: Uint32Array.from(prompt) }));
    expect(first.headers['x-kvroute-mode']).toBe('disaggregated');
    const events = await collect(first.stream);
    expect(events.at(-1)?.data).toBe('[DONE]');
    expect(events.filter((e) => (e.json as { choices?: unknown[] })?.choices?.length)).toHaveLength(5);
    expect(usageOf(events)?.prompt_tokens_details?.cached_tokens).toBe(0);
    // The same prompt again: the prefill worker now holds its blocks, and the client sees it.
    const again = await collect((await router.handle(request({ body, tokens: Uint32Array.from(prompt) }))).stream);
    expect(usageOf(again)?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    expect(await holds(prefill)).toBe(0);
    await router.idle();
    expect(zeroTotals(router.prefill.core as RoutingCore) && zeroTotals(router.decode.core as RoutingCore)).toBe(true);
  });

  it('serves a non-streamed request', async () => {
    const { router } = await fleet(style);
    const prompt = Array.from({ length: 12 }, (_, i) => 100 + i);
    const res = await router.handle(request({ body: { model: 'sim', prompt, max_tokens: 3, ignore_eos: true }, tokens: Uint32Array.from(prompt) }));
    expect(res.body).toMatchObject({ choices: [{ finish_reason: 'length' }], usage: { completion_tokens: 3 } });
  });
});
