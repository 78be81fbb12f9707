// PrefillRouter with its router queues and conditional disaggregation, over fake engines.
import { afterEach, describe, expect, it } from 'vitest';
import { QueueFullError, type QueueEvent } from '../../src/routing/queue/admission-queue.js';
import type { RoutingHints } from '../../src/routing/hints.js';
import { type Fleet, type FleetOptions, collect, request, startFleet, until, zeroTotals } from './harness.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

const events: Array<{ pool: string; ev: QueueEvent }> = [];
async function start(o: FleetOptions): Promise<Fleet> {
  events.length = 0;
  fleet = await startFleet({ ...o, router: { onQueueEvent: (pool, ev) => events.push({ pool, ev }), ...o.router } });
  return fleet;
}

const body = (tokens = 16, fake?: Record<string, string>) => ({
  model: 'fake',
  prompt: Array.from({ length: tokens }, (_, i) => i + 1),
  max_tokens: 3,
  stream: true,
  ...(fake ? { x_fake: fake } : {}),
});

/** A streamed request of `tokens` prompt tokens (1, 2, ...), as the router and the engine see it. */
const req = (tokens = 16, o: { fake?: Record<string, string>; signal?: AbortSignal; hints?: RoutingHints } = {}) =>
  request({
    tokens: Uint32Array.from({ length: tokens }, (_, i) => i + 1),
    body: body(tokens, o.fake),
    hints: o.hints ?? {},
    ...(o.signal ? { signal: o.signal } : {}),
  });

async function drained(f: Fleet) {
  await f.router.idle();
  expect(zeroTotals(f.prefillCore)).toBe(true);
  expect(zeroTotals(f.decodeCore)).toBe(true);
}

describe('the router queue in PrefillRouter', () => {
  it('holds requests while the worker is over the threshold, higher priority first, and frees nothing it never booked', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, router: { queue: { threshold: 0 } } });
    const client = new AbortController();
    // A holds its booking: its engine never answers.
    const a = f.router.handle(req(16, { fake: { decode: 'hang' }, signal: client.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'A at its engine');
    const low = f.router.handle(req(16, { hints: { priority: 0 } }));
    const high = f.router.handle(req(16, { hints: { priority: 3 } }));
    await until(() => f.router.queueStats().decode.depth === 2, 'two waiting');
    expect(f.router.queueStats().decode.byPriority).toEqual([
      { priority: 0, depth: 1 },
      { priority: 3, depth: 1 },
    ]);
    expect(f.decodeEngines[0].received).toHaveLength(1);
    client.abort();
    await expect(a).rejects.toMatchObject({ name: 'AbortError' });
    // Streams are pulled: the high one's first token (which lets the low one go) comes when it is read.
    const highRes = await high;
    expect(highRes.headers).toMatchObject({ 'x-kvroute-mode': 'aggregated', 'x-kvroute-mode-reason': 'no_prefill_workers' });
    await collect(highRes.stream);
    await collect((await low).stream);
    expect(events.filter((e) => e.ev.type === 'dispatched').map((e) => [e.pool, (e.ev as { priority: number }).priority])).toEqual([
      ['decode', 3],
      ['decode', 0],
    ]);
    await drained(f);
  });

  it('drops a waiting request whose client left at once: an AbortError, no engine call, no booking', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, router: { queue: { threshold: 0 } } });
    const holder = new AbortController();
    const a = f.router.handle(req(16, { fake: { decode: 'hang' }, signal: holder.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'A at its engine');
    const leaver = new AbortController();
    const b = f.router.handle(req(16, { signal: leaver.signal }));
    await until(() => f.router.queueStats().decode.depth === 1, 'B waiting');
    leaver.abort();
    await expect(b).rejects.toMatchObject({ name: 'AbortError' });
    expect(f.router.queueStats().decode).toMatchObject({ depth: 0, dropped: 1 });
    expect(f.decodeCore.totals().requests).toBe(1); // A's only
    holder.abort();
    await expect(a).rejects.toMatchObject({ name: 'AbortError' });
    expect(f.decodeEngines[0].received).toHaveLength(1);
    await drained(f);
  });

  it('refuses beyond its bounds with QueueFullError (429 with Retry-After)', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, router: { queue: { threshold: 0, maxRequests: 1 } } });
    const holder = new AbortController();
    const waiter = new AbortController();
    const a = f.router.handle(req(16, { fake: { decode: 'hang' }, signal: holder.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'A at its engine');
    const b = f.router.handle(req(16, { signal: waiter.signal }));
    await until(() => f.router.queueStats().decode.depth === 1, 'B waiting');
    const c = f.router.handle(req(16));
    await expect(c).rejects.toBeInstanceOf(QueueFullError);
    await expect(c).rejects.toMatchObject({ code: 'queue_full', reason: 'queue_full_requests' });
    waiter.abort();
    holder.abort();
    await Promise.allSettled([a, b]);
    await drained(f);
  });

  it('queues a disaggregated request in the prefill pool, and releases the queue when turned off at runtime', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, router: { queue: { threshold: 0 } } });
    const holder = new AbortController();
    const a = f.router.handle(req(16, { fake: { prefill: 'hang' }, signal: holder.signal }));
    await until(() => f.prefillEngines[0].received.length === 1, 'A at its prefill engine');
    const b = f.router.handle(req(16));
    await until(() => f.router.queueStats().prefill.depth === 1, 'B waiting for the prefill pool');
    expect(() => f.router.setQueueSettings({ threshold: -2 })).toThrow(RangeError);
    expect(f.router.queueSettings.threshold).toBe(0);
    f.router.setQueueSettings({ threshold: null });
    const res = await b;
    expect(res.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-mode-reason': 'unconditional' });
    await collect(res.stream);
    holder.abort();
    await expect(a).rejects.toMatchObject({ name: 'AbortError' });
    await drained(f);
  });

  it('refuses a queue over a core that cannot report its load', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    const { PrefillRouter } = await import('../../src/routing/prefill-router.js');
    const { KvRouter } = await import('../../src/routing/kv-router.js');
    const core = f.decodeCore;
    const blind = {
      config: core.config,
      route: core.route.bind(core),
      query: core.query.bind(core),
      markPrefillCompleted: core.markPrefillCompleted.bind(core),
      free: core.free.bind(core),
    };
    const transport = { json: async () => ({}), stream: async () => ({ nextBatch: async () => null, cancel() {} }) };
    const other = new KvRouter({ core: blind, pool: f.decodePool, transport });
    expect(() => new PrefillRouter({ prefill: f.router.prefill, decode: other, queue: { threshold: 1 } })).toThrow(/needs the load/);
  });
});

describe('conditional disaggregation in PrefillRouter', () => {
  const conditional = { enabled: true, bypassBelowTokens: 32, disaggAboveTokens: 1000, queueAware: false };

  it('serves a short prompt aggregated on the decode worker and a long one disaggregated, saying why', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, router: { conditionalDisagg: conditional } });
    const short = await f.router.handle(req(16));
    expect(short.headers).toMatchObject({ 'x-kvroute-mode': 'aggregated', 'x-kvroute-mode-reason': 'below_threshold' });
    await collect(short.stream);
    expect(f.prefillEngines[0].received).toHaveLength(0);
    const long = await f.router.handle(req(64));
    expect(long.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-mode-reason': 'remote_prefill_pays' });
    await collect(long.stream);
    expect(f.router.query(Uint32Array.from({ length: 16 }, (_, i) => i + 1))).toMatchObject({ mode: 'aggregated', reason: 'below_threshold' });
    expect(f.router.stats().modeReasons).toMatchObject({ below_threshold: 1, remote_prefill_pays: 1 });
    await drained(f);
  });

  it('disaggregates everything over SGLang decode workers, which cannot compute a prompt', async () => {
    const f = await start({ kind: 'sglang', prefill: 1, decode: 1, router: { conditionalDisagg: conditional } });
    const short = await f.router.handle(req(16));
    expect(short.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-mode-reason': 'unconditional' });
    await collect(short.stream);
    await drained(f);
  });

  it('disaggregates above the cap, and when the client pinned the prefill worker', async () => {
    const f = await start({
      kind: 'vllm',
      prefill: 1,
      decode: 1,
      router: { conditionalDisagg: { ...conditional, bypassBelowTokens: 100, disaggAboveTokens: 48 } },
    });
    const long = await f.router.handle(req(64));
    expect(long.headers['x-kvroute-mode-reason']).toBe('above_cap');
    await collect(long.stream);
    const pinned = await f.router.handle(req(16, { hints: { prefillWorkerId: 100 } }));
    expect(pinned.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-mode-reason': 'prefill_pinned' });
    await collect(pinned.stream);
    await drained(f);
  });

  it('serves aggregated when the prefill worker is busier than the local prefill would take', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, router: { conditionalDisagg: { ...conditional, queueAware: true } } });
    const holder = new AbortController();
    const a = f.router.handle(req(64, { fake: { prefill: 'hang' }, signal: holder.signal }));
    await until(() => f.prefillEngines[0].received.length === 1, 'A at its prefill engine');
    const b = await f.router.handle(req(64));
    expect(b.headers).toMatchObject({ 'x-kvroute-mode': 'aggregated', 'x-kvroute-mode-reason': 'prefill_queue_longer' });
    await collect(b.stream);
    holder.abort();
    await expect(a).rejects.toMatchObject({ name: 'AbortError' });
    expect(() => f.router.setConditionalDisagg({ bypassBelowTokens: -1 })).toThrow(RangeError);
    expect(f.router.setConditionalDisagg({ enabled: false }).enabled).toBe(false);
    await drained(f);
  });

  it('counts a fallback as prefill_failed and says so in its headers', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1 });
    const res = await f.router.handle(req(16, { fake: { prefill: 'fail' } }));
    expect(res.headers).toMatchObject({ 'x-kvroute-mode': 'fallback', 'x-kvroute-mode-reason': 'prefill_failed' });
    await collect(res.stream);
    expect(f.router.stats().modeReasons).toMatchObject({ unconditional: 1, prefill_failed: 1 });
    await drained(f);
  });
});
