import { describe, expect, it } from 'vitest';
import { isAbortError } from '../../src/engines/errors.js';
import { RequestTracker } from '../../src/routing/request-tracker.js';
import { Semaphore } from '../../src/routing/semaphore.js';

describe('Semaphore', () => {
  it('grants permits in arrival order and releases each once', async () => {
    const s = new Semaphore(1);
    const first = s.tryAcquire()!;
    expect(s.tryAcquire()).toBeUndefined();
    const order: number[] = [];
    const a = s.acquire().then((p) => (order.push(1), p));
    const b = s.acquire().then((p) => (order.push(2), p));
    expect(s.waiting).toBe(2);
    first.release();
    first.release(); // idempotent: does not grant a second permit
    const pa = await a;
    await Promise.resolve();
    expect(order).toEqual([1]);
    pa.release();
    (await b).release();
    expect(order).toEqual([1, 2]);
    expect(s.free).toBe(1);
  });

  it('an aborted wait leaves the queue and rejects with an AbortError', async () => {
    const s = new Semaphore(1);
    const held = s.tryAcquire()!;
    const ac = new AbortController();
    const p = s.acquire(ac.signal);
    ac.abort();
    await expect(p).rejects.toSatisfy(isAbortError);
    expect(s.waiting).toBe(0);
    held.release();
    expect(s.free).toBe(1);
    await expect(s.acquire(AbortSignal.abort())).resolves.toBeDefined(); // a free permit is taken even so
  });

  it('refuses a bad permit count', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
    expect(() => new Semaphore(1.5)).toThrow(RangeError);
  });
});

describe('RequestTracker', () => {
  it('starts the decode phase only after the prefill permit is released by its background task', async () => {
    const t = new RequestTracker('r1');
    const events: string[] = [];
    const prefillPermit = await t.setPhase('prefill');
    // The background prefill: routes, records, then releases the permit it carries.
    const background = (async () => {
      await new Promise((r) => setTimeout(r, 20));
      t.recordRouting('prefill', { worker: 3, dpRank: 1, overlapBlocks: 2, promptTokens: 64, cachedTokens: 32 });
      events.push('prefill routed');
      prefillPermit.release();
    })();
    const decodePermit = await t.setPhase('decode');
    events.push(`decode sees prefill worker ${t.routingOf('prefill')?.worker}`);
    decodePermit.release();
    await background;
    expect(events).toEqual(['prefill routed', 'decode sees prefill worker 3']);
    expect(t.phase).toBe('decode');
    expect(t.summary().phases).toEqual(['prefill', 'decode']);
  });

  it('records workers per phase, TTFT, inter-token latency and hit rates', () => {
    let now = 1000;
    const t = new RequestTracker('r2', () => now);
    t.recordRouting('prefill', { worker: 1, dpRank: 0, overlapBlocks: 1, promptTokens: 100, cachedTokens: 25 });
    t.recordRouting('decode', { worker: 2, dpRank: 1, overlapBlocks: 0, promptTokens: 100, cachedTokens: 0 });
    now = 1050;
    t.recordTokens(1);
    now = 1060;
    t.recordTokens(2);
    now = 1090;
    t.recordTokens(1);
    t.recordTokens(0); // nothing
    t.recordUsage(100, 40);
    expect(t.summary()).toEqual({
      requestId: 'r2',
      phases: [],
      workers: { prefill: { worker: 1, dpRank: 0 }, decode: { worker: 2, dpRank: 1 } },
      ttftMs: 50,
      itlMs: { mean: 20, max: 30, samples: 2 },
      outputTokens: 4,
      kvHitRate: 0.25,
      engineKvHitRate: 0.4,
    });
  });

  it('has no latency figures before tokens and ignores nonsense usage', () => {
    const t = new RequestTracker('r3', () => 0);
    t.recordUsage(0, 5);
    t.recordUsage(Number.NaN, 5);
    const s = t.summary();
    expect(s.ttftMs).toBeUndefined();
    expect(s.itlMs).toBeUndefined();
    expect(s.kvHitRate).toBeUndefined();
    expect(s.engineKvHitRate).toBeUndefined();
  });
});
