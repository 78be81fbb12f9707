// Failover before the first byte, over fake engines on loopback: a leg whose engine refuses the
// connection goes to another worker (its booking moved, never two held), at most maxRetries
// times, for every handoff; a leg the engine may have accepted is never sent twice; a pin the
// client set keeps the leg, a session's does not.
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutingCore } from '../../src/core/routing-core.js';
import { EngineError } from '../../src/engines/errors.js';
import type { EngineKind } from '../../src/engines/types.js';
import type { KvRouterCore } from '../../src/routing/booking.js';
import type { LegRetry } from '../../src/routing/kv-router.js';
import { SessionAffinity } from '../../src/routing/session-affinity.js';
import type { EjectionEvent } from '../../src/routing/worker-pool.js';
import { type Fleet, type FleetOptions, collect, request, startFleet, until, zeroTotals } from './harness.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

/** Route and free calls per request id and pool, in order: a booking moved frees before it routes again. */
class BookingLog {
  readonly calls: string[] = [];
  readonly held = new Map<string, number>();
  maxHeld = 0;

  watch(pool: string, core: RoutingCore): KvRouterCore {
    const key = (id: string) => `${pool}/${id}`;
    return {
      config: core.config,
      route: (tokens, req) => {
        const d = core.route(tokens, req);
        const n = (this.held.get(key(d.requestId)) ?? 0) + 1;
        this.held.set(key(d.requestId), n);
        this.maxHeld = Math.max(this.maxHeld, n);
        this.calls.push(`route ${key(d.requestId)} -> ${d.worker}`);
        return d;
      },
      query: (tokens, req) => core.query(tokens, req),
      markPrefillCompleted: (id) => core.markPrefillCompleted(id),
      free: (id) => {
        const freed = core.free(id);
        if (freed) {
          this.held.set(key(id), (this.held.get(key(id)) ?? 1) - 1);
          this.calls.push(`free ${key(id)}`);
        }
        return freed;
      },
    };
  }
}

async function start(kind: EngineKind, o: Omit<FleetOptions, 'kind'> & { deadPrefill?: number; deadDecode?: number }) {
  const log = new BookingLog();
  const retries: LegRetry[] = [];
  const f = await startFleet({
    kind,
    ...o,
    failover: { onRetry: (r) => retries.push(r), ...o.failover },
    routerCore: (pool, core) => log.watch(pool, core),
  });
  fleet = f;
  // Dead before any request: their ports refuse connections (nothing was kept alive to them).
  await Promise.all([...f.prefillEngines.slice(0, o.deadPrefill ?? 0), ...f.decodeEngines.slice(0, o.deadDecode ?? 0)].map((e) => e.close()));
  return { f, log, retries };
}

const body = (extra: Record<string, unknown> = {}) => ({
  model: 'fake',
  prompt: Array.from({ length: 16 }, (_, i) => i),
  max_tokens: 3,
  stream: true,
  ...extra,
});

async function idle(f: Fleet) {
  await f.router.idle();
  await until(() => zeroTotals(f.prefillCore) && zeroTotals(f.decodeCore), 'bookings to return to zero');
}

describe('failover before the first byte', () => {
  it('moves an aggregated leg off workers that refuse connections, freeing each booking before the next', async () => {
    const { f, log, retries } = await start('vllm', { prefill: 0, decode: 3, deadDecode: 2 });
    for (let i = 0; i < 12; i++) {
      const res = await f.router.handle(request({ body: body(), requestId: `agg-${i}` }));
      expect(res.headers['x-kvroute-decode-worker']).toBe('202');
      expect((await collect(res.stream)).at(-1)?.data).toBe('[DONE]');
    }
    expect(retries.length).toBeGreaterThan(0); // ties among three idle workers: some picks were dead ones
    for (const r of retries) expect(r).toMatchObject({ pool: 'decode', reason: 'engine_unreachable' });
    expect(retries.every((r) => r.worker === 200 || r.worker === 201)).toBe(true);
    expect(log.maxHeld).toBe(1);
    expect(f.router.decode.stats().retries).toBe(retries.length);
    expect(f.decodeEngines[2].received).toHaveLength(12);
    await idle(f);
  });

  it('gives up after maxRetries, with the last refusal (mayHaveAccepted false), every booking freed', async () => {
    const { f, retries } = await start('vllm', { prefill: 0, decode: 3, deadDecode: 3, failover: { maxRetries: 1 } });
    const err = await f.router.handle(request({ body: body(), requestId: 'gone' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).mayHaveAccepted).toBe(false);
    expect(retries).toHaveLength(1);
    expect(retries[0].to).not.toBe(retries[0].worker);
    await idle(f);
  });

  it('never retries a leg the engine may have accepted (a 5xx answer)', async () => {
    const { f, retries } = await start('vllm', { prefill: 0, decode: 2, decodeBehaviour: { failStatus: 500, failCount: 1 } });
    const err = await f.router.handle(request({ body: body(), requestId: 'five' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 500, mayHaveAccepted: true });
    expect(retries).toHaveLength(0);
    expect(f.decodeEngines.reduce((n, e) => n + e.received.length, 0)).toBe(1);
    await idle(f);
  });

  it('keeps a leg on the worker the client pinned, and moves one its session pinned', async () => {
    const sessions = new SessionAffinity();
    const { f, retries } = await start('vllm', { prefill: 0, decode: 2, router: { sessions } });
    const first = await f.router.handle(request({ body: body(), hints: { sessionId: 's' } }));
    await collect(first.stream);
    const bound = Number(first.headers['x-kvroute-decode-worker']);
    await f.decodeEngines.find((e) => e.id === bound)!.close();
    const pinned = await f.router.handle(request({ body: body(), hints: { workerId: bound } })).catch((e: unknown) => e);
    expect(pinned).toMatchObject({ mayHaveAccepted: false });
    expect(retries).toHaveLength(0);
    const next = await f.router.handle(request({ body: body(), hints: { sessionId: 's' } }));
    await collect(next.stream);
    expect(Number(next.headers['x-kvroute-decode-worker'])).not.toBe(bound);
    expect(retries).toMatchObject([{ worker: bound }]);
    await idle(f);
  });

  it.each(['vllm', 'trtllm'] as const)('moves both legs of the %s handoff off dead workers', async (kind) => {
    const { f, log } = await start(kind, { prefill: 2, decode: 2, deadPrefill: 1, deadDecode: 1 });
    for (let i = 0; i < 8; i++) {
      const res = await f.router.handle(request({ body: body(), requestId: `${kind}-${i}` }));
      expect(res.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-prefill-worker': '101', 'x-kvroute-decode-worker': '201' });
      expect((await collect(res.stream)).at(-1)?.data).toBe('[DONE]');
    }
    expect(f.router.prefill.stats().retries + f.router.decode.stats().retries).toBeGreaterThan(0);
    expect(f.router.stats().fallbacks).toBe(0);
    expect(log.maxHeld).toBe(1);
    await idle(f);
  });

  it('routes an SGLang pair again when the prefill worker refuses: the decode leg carries the new bootstrap address', async () => {
    const { f, retries, log } = await start('sglang', { prefill: 2, decode: 1, deadPrefill: 1, prefillBehaviour: { waitForDecode: true } });
    for (let i = 0; i < 8; i++) {
      const res = await f.router.handle(request({ body: body(), requestId: `sg-${i}` }));
      expect(res.headers['x-kvroute-prefill-worker']).toBe('101');
      expect((await collect(res.stream)).at(-1)?.data).toBe('[DONE]');
    }
    expect(retries.some((r) => r.pool === 'prefill' && r.worker === 100 && r.to === 101)).toBe(true);
    // Every decode leg went to the live prefill's bootstrap: none waited at the dead one's.
    expect(f.decodeEngines[0].received.map((r) => r.body.bootstrap_port)).toEqual(Array(8).fill(f.prefillEngines[1].bootstrapPort));
    expect(f.router.stats().fallbacks).toBe(0);
    expect(log.maxHeld).toBe(1);
    await idle(f);
  });

  it('moves an SGLang decode leg with the same address: the prefill waits for it', async () => {
    const { f, retries } = await start('sglang', { prefill: 1, decode: 2, deadDecode: 1, prefillBehaviour: { waitForDecode: true } });
    for (let i = 0; i < 6; i++) {
      const res = await f.router.handle(request({ body: body(), requestId: `sgd-${i}` }));
      expect(res.headers['x-kvroute-decode-worker']).toBe('201');
      expect((await collect(res.stream)).at(-1)?.data).toBe('[DONE]');
    }
    expect(retries.every((r) => r.pool === 'decode' && r.worker === 200)).toBe(true);
    await idle(f);
  });

  it.each([
    ['without outlier detection, the idle dead worker stays the cheapest: every request pays a retry', undefined, 16],
    ['with outlier detection, the first refusal ejects the idle dead worker: one retry in all', { consecutiveConnectFailures: 1 }, 1],
  ] as const)('%s', async (_what, outlierDetection, expected) => {
    const ejections: EjectionEvent[] = [];
    const { f, retries } = await start('vllm', { prefill: 0, decode: 4, deadDecode: 1, pools: { outlierDetection, onEjection: (e) => ejections.push(e) } });
    // The live workers carry load; the dead one is idle, so the cost prefers it.
    const tokens = Uint32Array.from({ length: 64 }, (_, i) => 1000 + i);
    for (const w of [201, 202, 203]) f.decodeCore.route(tokens, { requestId: `load-${w}`, pinnedWorker: w });
    for (let i = 0; i < 16; i++) {
      const res = await f.router.handle(request({ body: body(), requestId: `ej-${i}` }));
      expect(res.headers['x-kvroute-decode-worker']).not.toBe('200');
      await collect(res.stream);
    }
    expect(retries).toHaveLength(expected);
    expect(retries.every((r) => r.worker === 200)).toBe(true);
    if (outlierDetection) {
      expect(ejections).toMatchObject([{ pool: 'decode', worker: 200, reason: 'connect_failure', ejections: 1, durationMs: 30_000 }]);
      expect(f.decodePool.state(200)).toMatchObject({ ejected: true, selectable: false, outlier: { ejections: 1, lastEjectionReason: 'connect_failure' } });
    } else {
      expect(ejections).toHaveLength(0);
    }
    for (const w of [201, 202, 203]) f.decodeCore.free(`load-${w}`);
    await idle(f);
  });
});
