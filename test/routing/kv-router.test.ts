import { afterEach, describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore } from '../../src/core/routing-core.js';
import { NoEligibleWorkerError } from '../../src/core/routing-errors.js';
import { isAbortError } from '../../src/engines/errors.js';
import { EngineClients } from '../../src/engines/http-client.js';
import { HttpTransport } from '../../src/engines/http-transport.js';
import { StreamAbandonedError } from '../../src/routing/booking-guard.js';
import { UnknownWorkerHintError } from '../../src/routing/errors.js';
import { KvRouter } from '../../src/routing/kv-router.js';
import { carriesToken } from '../../src/engines/sse.js';
import { WorkerPool } from '../../src/routing/worker-pool.js';
import { type FakeEngine, startFakeEngine } from '../engines/fake-engine.js';
import { BLOCK, collect, until, zeroTotals } from './harness.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function setup(n = 2, dpSize = 1, opts: { abandonAfterMs?: number } = {}) {
  const engines: FakeEngine[] = [];
  for (let i = 0; i < n; i++) engines.push(await startFakeEngine({ id: i, kind: 'vllm', role: 'decode', behaviour: { tokens: 3 } }));
  const core = new RoutingCore(new KvIndexer({ blockSize: BLOCK }), { blockSize: BLOCK, seed: 3 });
  const pool = new WorkerPool('decode', core, ['decode']);
  for (const e of engines) pool.add({ id: e.id, role: 'decode', kind: 'vllm', baseUrl: e.url, dpSize });
  const clients = new EngineClients();
  const router = new KvRouter({ core, pool, transport: new HttpTransport(clients), ...opts });
  closers.push(async () => {
    await clients.close();
    await Promise.all(engines.map((e) => e.close()));
  });
  return { engines, core, pool, router };
}

const tokens = Uint32Array.from({ length: 32 }, (_, i) => i);
const body = { model: 'm', prompt: [...tokens], max_tokens: 3, stream: true };

describe('KvRouter', () => {
  it('books, streams, marks prefill completed at the first token and frees at the end', async () => {
    const { core, router, engines } = await setup();
    const b = router.book(tokens, { requestId: 'a' });
    expect(core.totals()).toMatchObject({ requests: 1, prefillTokens: 32 });
    const stream = await router.stream(b, '/v1/completions', body, { requestId: 'a', signal: new AbortController().signal });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    expect(carriesToken(first.value!)).toBe(true);
    expect(core.totals()).toMatchObject({ requests: 1, prefillTokens: 0 });
    const rest = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value.data);
    expect(rest.at(-1)).toBe('[DONE]');
    expect(zeroTotals(core)).toBe(true);
    expect(router.stats().finished.end).toBe(1);
    const served = engines.find((e) => e.id === b.worker.id)!;
    expect(served.received[0].headers['x-request-id']).toBe('a');
    expect(served.received[0].headers['x-data-parallel-rank']).toBeUndefined();
  });

  it('sends the chosen rank of a data-parallel worker', async () => {
    const { router, engines } = await setup(1, 4);
    const b = router.book(tokens, { requestId: 'dp', pinnedDpRank: 3 });
    expect(b.decision.dpRank).toBe(3);
    await router.json(b, '/v1/completions', { ...body, stream: false }, { requestId: 'dp', signal: new AbortController().signal });
    expect(engines[0].received[0].headers['x-data-parallel-rank']).toBe('3');
  });

  it('frees a JSON leg that fails, and one whose client already left', async () => {
    const { core, router, engines } = await setup(1);
    engines[0].behaviour.failStatus = 503;
    engines[0].behaviour.failCount = 1;
    const b = router.book(tokens, { requestId: 'f' });
    await expect(router.json(b, '/v1/completions', body, { requestId: 'f', signal: new AbortController().signal })).rejects.toMatchObject({ status: 503 });
    expect(zeroTotals(core)).toBe(true);
    const b2 = router.book(tokens, { requestId: 'g' });
    await expect(router.json(b2, '/v1/completions', body, { requestId: 'g', signal: AbortSignal.abort() })).rejects.toSatisfy(isAbortError);
    await expect(
      router.stream(router.book(tokens, { requestId: 'h' }), '/v1/completions', body, { requestId: 'h', signal: AbortSignal.abort() }),
    ).rejects.toSatisfy(isAbortError);
    expect(zeroTotals(core)).toBe(true);
    expect(engines[0].received).toHaveLength(1);
  });

  it('a stream never read is abandoned: booking freed and engine leg closed', async () => {
    const { core, router, engines } = await setup(1, 1, { abandonAfterMs: 50 });
    engines[0].behaviour.tokenDelayMs = 20;
    const b = router.book(tokens, { requestId: 'n' });
    const stream = await router.stream(b, '/v1/completions', { ...body, max_tokens: 100 }, { requestId: 'n', signal: new AbortController().signal });
    await until(() => zeroTotals(core), 'the abandoned booking to be freed');
    await until(() => engines[0].aborted.length === 1, 'the engine to see the close');
    expect(router.stats().finished.abandoned).toBe(1);
    await expect(collect(stream)).rejects.toThrow(StreamAbandonedError);
  });

  it('refuses unknown pinned workers and empty selections with typed errors', async () => {
    const { router, pool, core } = await setup(2);
    expect(() => router.book(tokens, { requestId: 'x', pinnedWorker: 99 })).toThrow(UnknownWorkerHintError);
    pool.setHealthy(0, false);
    pool.setHealthy(1, false);
    expect(() => router.book(tokens, { requestId: 'y' })).toThrow(NoEligibleWorkerError);
    pool.setHealthy(1, true);
    expect(router.book(tokens, { requestId: 'z' }).worker.id).toBe(1);
    expect(router.query(tokens, {}).worker).toBe(1);
    expect(core.totals().requests).toBe(1);
    expect(() => new KvRouter({ core, pool, transport: new HttpTransport(new EngineClients()), abandonAfterMs: 0 })).toThrow(RangeError);
    expect(() => new KvRouter({ core, pool, transport: new EngineClients() as never })).toThrow(/options.transport must be a LegTransport/);
  });
});
