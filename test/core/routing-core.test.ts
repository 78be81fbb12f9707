import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore, type RoutingConfig, type RoutingDecision } from '../../src/core/routing-core.js';
import { BackpressureError, DuplicateRequestError, MissingRoutingHintError, NoEligibleWorkerError, RoutingError } from '../../src/core/routing-errors.js';

const BS = 4;
const range = (first: number, n: number) => Uint32Array.from({ length: n }, (_, i) => first + i);

/** A virtual clock the tests move by hand. */
function virtualClock() {
  const clock = { now: 0, fn: () => clock.now };
  return clock;
}

function setup(workers: number, config: Partial<RoutingConfig> = {}, mode: 'events' | 'approximate' = 'events') {
  const clock = virtualClock();
  const indexer = new KvIndexer({ blockSize: BS, mode, clock: clock.fn });
  const core = new RoutingCore(indexer, { blockSize: BS, seed: 1, clock: clock.fn, ...config });
  core.setWorkers(Array.from({ length: workers }, (_, w) => ({ worker: w, kvCapacityBlocks: 100 })));
  return { core, indexer, clock };
}

/** Worker `w` reports (through KV events) that it holds the first `blocks` blocks of `tokens`. */
function hold(indexer: KvIndexer, w: number, tokens: Uint32Array, blocks: number) {
  const engineHashes = BigUint64Array.from({ length: blocks }, (_, i) => BigInt(w * 1_000_000 + tokens[0] * 1000 + i + 1));
  expect(indexer.applyStored(w, 0, null, engineHashes, tokens.subarray(0, blocks * BS))).toBe(true);
}

describe('RoutingCore decisions', () => {
  it('routes to the worker holding the prefix and explains the decision', () => {
    const { core, indexer } = setup(3);
    const t = range(0, 18); // 4 complete blocks + 2 tokens
    hold(indexer, 2, t, 3);
    const d = core.route(t, { requestId: 'a' });
    expect(d).toMatchObject({ requestId: 'a', worker: 2, dpRank: 0, overlapBlocks: 3, promptTokens: 18, cachedTokens: 12, prefillTokens: 6, policy: 'kv' });
    // 18 tokens = 4.5 blocks, credit 3: prefill term 1.5; decode: 4 new blocks.
    expect(d.candidates[0]).toEqual({
      worker: 2,
      dpRank: 0,
      overlapBlocks: 3,
      lowerTierBlocks: { host: 0, disk: 0, external: 0 },
      prefillBlocks: 4.5,
      decodeBlocks: 4,
      cost: 5.5,
    });
    expect(d.candidates.map((c) => c.cost)).toEqual([5.5, 8.5, 8.5]);
    for (const k of ['hash', 'match', 'select', 'total'] as const) expect(d.timingsUs[k]).toBeGreaterThanOrEqual(0);
    expect(d.timingsUs.total).toBeGreaterThanOrEqual(d.timingsUs.hash);
    expect(core.load().find((l) => l.worker === 2)).toEqual({ worker: 2, dpRank: 0, prefillTokens: 6, decodeBlocks: 4, activeBlocks: 4, requests: 1 });
    expect(core.totals()).toEqual({ prefillTokens: 6, decodeBlocks: 4, requests: 1 });
  });

  it('marks prefill completed once, grows output blocks with decay, frees exactly once', () => {
    const { core } = setup(1);
    core.route(range(0, 6), { requestId: 'a', expectedOutputTokens: 8 });
    expect(core.markPrefillCompleted('a')).toBe(true);
    expect(core.markPrefillCompleted('a')).toBe(false);
    expect(core.totals().prefillTokens).toBe(0);
    expect(core.addOutputTokens('a', 2)).toBe(true); // 8 tokens: 2 blocks, weight 6/8
    expect(core.load()[0]).toMatchObject({ activeBlocks: 2, decodeBlocks: 1.5 });
    expect(core.addOutputTokens('missing', 1)).toBe(false);
    expect(core.free('a')).toBe(true);
    expect(core.free('a')).toBe(false);
    expect(core.totals()).toEqual({ prefillTokens: 0, decodeBlocks: 0, requests: 0 });
    expect(core.stats()).toEqual({ booked: 1, freed: 1, expired: 0, active: 0 });
  });

  it('query books nothing and predicts the next route', () => {
    const { core } = setup(8);
    const t = range(0, 16);
    for (let i = 0; i < 20; i++) {
      const q = core.query(t);
      expect(q.requestId).toBe('');
      expect(core.totals().requests).toBe(0);
      const d = core.route(t, { requestId: `r${i}` });
      expect(d.worker).toBe(q.worker);
      core.free(`r${i}`);
    }
  });

  it('separates caches by LoRA adapter and namespace', () => {
    const { core, indexer } = setup(2);
    const t = range(0, 16);
    hold(indexer, 1, t, 4);
    expect(core.query(t).overlapBlocks).toBe(4);
    expect(core.query(t, { loraName: 'adapter' }).overlapBlocks).toBe(0);
    expect(core.query(t, { cacheNamespace: 'tenant' }).overlapBlocks).toBe(0);
    expect(core.query(t, { mmHashes: [[], [], ['image-1']] }).overlapBlocks).toBe(2);
  });

  it('approximate mode learns from its own decisions', () => {
    const { core } = setup(4, { approximate: true }, 'approximate');
    const t = range(0, 32);
    const first = core.route(t, { requestId: 'a' });
    core.free('a');
    const again = core.route(t, { requestId: 'b' });
    expect(again).toMatchObject({ worker: first.worker, overlapBlocks: 8, cachedTokens: 32 });
  });
});

it('returns worker ids past the small-integer range exactly, after many small ones', () => {
  const clock = virtualClock();
  const indexer = new KvIndexer({ blockSize: BS, clock: clock.fn });
  const core = new RoutingCore(indexer, { blockSize: BS, seed: 1, clock: clock.fn });
  const big = [2 ** 30 - 1, 2 ** 30, 2 ** 31 + 5, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER];
  core.setWorkers([0, 1, ...big].map((worker) => ({ worker, kvCapacityBlocks: 100 })));
  const t = range(0, 18);
  hold(indexer, 1, t, 2);
  // Warm the decision path on small ids first (the optimised code then meets the large ones).
  for (let i = 0; i < 2_000; i++) {
    expect(core.route(t, { requestId: `s${i}` })).toMatchObject({ worker: 1, overlapBlocks: 2, promptTokens: 18, cachedTokens: 8 });
    core.free(`s${i}`);
  }
  for (const w of big) {
    const tokens = range(1000 + (w % 1000), 18);
    const engineHashes = BigUint64Array.from({ length: 3 }, (_, i) => BigInt(9_000_000 + (w % 1000) * 10 + i));
    expect(indexer.applyStored(w, 0, null, engineHashes, tokens.subarray(0, 3 * BS))).toBe(true);
    const d = core.route(tokens, { requestId: `b${w}` });
    expect(d).toMatchObject({ worker: w, dpRank: 0, overlapBlocks: 3, promptTokens: 18, cachedTokens: 12, prefillTokens: 6 });
    expect(d.candidates[0]).toMatchObject({ worker: w, overlapBlocks: 3, lowerTierBlocks: { host: 0, disk: 0, external: 0 } });
    expect(Object.is(d.candidates[0].worker, w)).toBe(true);
    core.free(`b${w}`);
  }
});

describe('RoutingCore policies and eligibility', () => {
  it('breaks exact ties uniformly at random, reproducibly with the seed', () => {
    const run = (seed: number) => {
      const { core } = setup(4, { seed });
      const counts = [0, 0, 0, 0];
      const picks: number[] = [];
      for (let i = 0; i < 4000; i++) {
        const d = core.route(range(0, 32), { requestId: `r${i}` });
        counts[d.worker]++;
        picks.push(d.worker);
        core.free(`r${i}`);
      }
      return { counts, picks };
    };
    const a = run(7);
    // 1000 expected each; seeded, so the wide band is for clarity, not to absorb flakiness.
    for (const c of a.counts) expectWithin(c, 850, 1150);
    expect(run(7).picks).toEqual(a.picks);
    expect(run(8).picks).not.toEqual(a.picks);
  });

  it('samples by softmax of the normalised costs at temperature > 0', () => {
    const { core, indexer } = setup(3, { temperature: 1 });
    const t = range(0, 40); // 10 blocks
    hold(indexer, 0, t, 10);
    hold(indexer, 1, t, 5);
    // Costs 10, 15, 20: normalised 0, 0.5, 1.
    const w = [1, Math.exp(-0.5), Math.exp(-1)];
    const sum = w[0] + w[1] + w[2];
    const n = 20_000;
    const counts = [0, 0, 0];
    for (let i = 0; i < n; i++) {
      counts[core.route(t, { requestId: `r${i}` }).worker]++;
      core.free(`r${i}`);
    }
    counts.forEach((c, i) => expect(Math.abs(c / n - w[i] / sum)).toBeLessThan(0.02));
    expect(core.query(t, { temperature: 0 }).worker).toBe(0);
  });

  it('round robin: query peeks, route advances', () => {
    const { core } = setup(3, { policy: 'round_robin' });
    const t = range(0, 8);
    expect(core.query(t).worker).toBe(0);
    expect(core.query(t).worker).toBe(0);
    const seen = Array.from({ length: 5 }, (_, i) => core.route(t, { requestId: `r${i}` }).worker);
    expect(seen).toEqual([0, 1, 2, 0, 1]);
    expect(core.query(t).worker).toBe(2);
    expect(core.route(t, { requestId: 'x', allowedWorkers: [0, 1] }).worker).toBe(0);
  });

  it('least_loaded and random', () => {
    const { core } = setup(3, { policy: 'least_loaded' });
    core.route(range(0, 400), { requestId: 'big', pinnedWorker: 1 });
    core.route(range(0, 40), { requestId: 'small', pinnedWorker: 0 });
    expect(core.route(range(0, 400), { requestId: 'c' }).worker).toBe(2);
    const random = setup(4, { policy: 'random' }).core;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[random.route(range(0, 8), { requestId: `r${i}` }).worker]++;
    for (const c of counts) expectWithin(c, 850, 1150);
  });

  it('direct needs a pinned worker; pins restrict the worker and rank', () => {
    const { core } = setup(0, { policy: 'direct' });
    core.setWorkers([{ worker: 5, dpSize: 4 }]);
    const t = range(0, 8);
    expect(() => core.route(t, { requestId: 'a' })).toThrow(MissingRoutingHintError);
    expect(core.route(t, { requestId: 'a', pinnedWorker: 5, pinnedDpRank: 3 })).toMatchObject({ worker: 5, dpRank: 3 });
    const err = catchError(() => core.route(t, { requestId: 'b', pinnedWorker: 6 }));
    expect(err).toBeInstanceOf(NoEligibleWorkerError);
    expect(err).toMatchObject({ code: 'no_eligible_worker', message: 'no eligible worker: pinned worker 6 is not in the pool' });
    expect(() => core.route(t, { requestId: 'b', pinnedWorker: 5, pinnedDpRank: 4 })).toThrow(NoEligibleWorkerError);
    expect(core.stats().booked).toBe(1);
  });

  it('excludes busy workers by booked prefill and by decode share of capacity', () => {
    const { core } = setup(2, { busyPrefillTokens: 100 });
    const a = core.route(range(0, 100), { requestId: 'a' });
    const b = core.route(range(0, 100), { requestId: 'b' });
    expect(a.worker).not.toBe(b.worker);
    expect(() => core.route(range(0, 4), { requestId: 'c' })).toThrow(/2 busy/);
    core.markPrefillCompleted('a');
    expect(core.route(range(0, 4), { requestId: 'c' }).worker).toBe(a.worker);

    const d = setup(2, { busyDecodeFraction: 0.5 }).core; // capacity 100 blocks
    d.route(range(0, 200), { requestId: 'x', pinnedWorker: 0 }); // 50 blocks
    for (let i = 0; i < 5; i++) expect(d.route(range(1000, 8), { requestId: `y${i}` }).worker).toBe(1);
  });

  it('refuses with backpressure past the prefill queue cap', () => {
    const { core, clock } = setup(2, { maxQueuedPrefillTokens: 100 });
    core.route(range(0, 150), { requestId: 'huge' }); // alone in an empty queue: admitted
    clock.now = 500;
    core.markPrefillCompleted('huge');
    core.route(range(0, 60), { requestId: 'a' });
    clock.now = 600;
    const err = catchError(() => core.route(range(1000, 60), { requestId: 'b' }));
    expect(err).toBeInstanceOf(BackpressureError);
    expect(err).toBeInstanceOf(RoutingError);
    const bp = err as BackpressureError;
    expect(bp.code).toBe('backpressure');
    expect(bp.retryAfterMs).toBeGreaterThanOrEqual(10);
    expect(bp.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(bp.message).toMatch(/maxQueuedPrefillTokens 100/);
    expect(core.stats().booked).toBe(2);
  });

  it("ttft with engine priority: a class waits only for the started and its own or higher classes' queued work", () => {
    // Worker 0 has a long queue of class 0 booked (waiting behind its first request); worker 1 a
    // shorter one of class 1.
    const { core } = setup(2, { policy: 'ttft' });
    for (let i = 0; i < 4; i++) core.route(range(10_000 * (i + 1), 8000), { requestId: `low${i}`, pinnedWorker: 0, enginePriority: 0 });
    core.route(range(90_000, 20_000), { requestId: 'high', pinnedWorker: 1, enginePriority: 1 });
    const t = range(500_000, 400);
    // First come, first served (no class): worker 1's 20k tokens are less than worker 0's 32k.
    expect(core.query(t, {}).worker).toBe(1);
    expect(core.query(t, { enginePriority: 0 }).worker).toBe(1);
    // Class 1 jumps worker 0's waiting class-0 requests (only the started one is ahead of it),
    // but not worker 1's class-1 queue.
    const high = core.query(t, { enginePriority: 1 });
    expect(high.worker).toBe(0);
    expect(high.predictedTtftMs!).toBeLessThan(core.query(t, { enginePriority: 0, pinnedWorker: 0 }).predictedTtftMs!);
    for (const bad of [1.5, Number.NaN, 2 ** 31, '1']) {
      expect(() => core.query(t, { enginePriority: bad as number })).toThrow(typeof bad === 'string' ? TypeError : RangeError);
    }
    for (const id of ['low0', 'low1', 'low2', 'low3', 'high']) expect(core.free(id)).toBe(true);
    expect(core.totals()).toEqual({ prefillTokens: 0, decodeBlocks: 0, requests: 0 });
  });

  it('refuses a duplicate request id', () => {
    const { core } = setup(2);
    core.route(range(0, 8), { requestId: 'a' });
    const err = catchError(() => core.route(range(0, 8), { requestId: 'a' }));
    expect(err).toBeInstanceOf(DuplicateRequestError);
    expect((err as RoutingError).code).toBe('duplicate_request_id');
    core.free('a');
    expect(core.route(range(0, 8), { requestId: 'a' }).requestId).toBe('a');
  });

  it('keeps a removed worker bookings until freed, and expires stale ones in virtual time', () => {
    const { core, clock } = setup(2, { staleBookingMs: 1000 });
    core.route(range(0, 40), { requestId: 'a', pinnedWorker: 1 });
    expect(core.removeWorker(1)).toBe(true);
    expect(core.removeWorker(1)).toBe(false);
    expect(core.workers()).toEqual([{ worker: 0, dpSize: 1, kvCapacityBlocks: 100 }]);
    expect(core.load().map((l) => l.worker)).toEqual([0, 1]);
    expect(core.route(range(0, 40), { requestId: 'b' }).worker).toBe(0);
    expect(core.free('a')).toBe(true);
    expect(core.load().map((l) => l.worker)).toEqual([0]);
    clock.now = 999;
    expect(core.expireStale()).toBe(0);
    clock.now = 1000;
    expect(core.expireStale()).toBe(1);
    expect(core.stats()).toEqual({ booked: 2, freed: 1, expired: 1, active: 0 });
  });

  it('lists at most 8 candidates, best first, with the chosen one', () => {
    const { core, indexer } = setup(20, { temperature: 50 });
    const t = range(0, 40);
    for (let w = 0; w < 20; w++) if (w % 10) hold(indexer, w, t, w % 10);
    for (let i = 0; i < 100; i++) {
      const d: RoutingDecision = core.route(t, { requestId: `r${i}` });
      expect(d.candidates).toHaveLength(8);
      expect(d.candidates.some((c) => c.worker === d.worker)).toBe(true);
      const costs = d.candidates.slice(0, 7).map((c) => c.cost);
      expect(costs).toEqual([...costs].sort((x, y) => x - y));
      core.free(`r${i}`);
    }
  });
});

function expectWithin(value: number, low: number, high: number) {
  expect(value).toBeGreaterThan(low);
  expect(value).toBeLessThan(high);
}

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('RoutingCore over an EAGLE index', () => {
  it('hashes prompts with the index window: blocks of blockSize + 1 tokens', () => {
    const clock = virtualClock();
    const indexer = new KvIndexer({ blockSize: BS, eagle: true, clock: clock.fn });
    const core = new RoutingCore(indexer, { blockSize: BS, seed: 1, clock: clock.fn });
    core.setWorkers([{ worker: 0 }, { worker: 1 }]);
    const t = range(0, 3 * BS + 1);
    // Worker 1 stored 3 blocks: an EAGLE event carries one token past them.
    expect(indexer.applyStored(1, 0, null, BigUint64Array.of(1n, 2n, 3n), t)).toBe(true);
    const d = core.query(range(0, 4 * BS));
    expect([d.worker, d.overlapBlocks]).toEqual([1, 3]);
    // 4 x BS tokens are only 3 EAGLE blocks: the last one lacks its lookahead token.
    expect(d.cachedTokens).toBe(3 * BS);
  });
});

describe('RoutingCore: bookings of other router replicas', () => {
  it("applies another replica's booking to the same worker, apart from its own, and releases it", () => {
    const a = setup(2);
    const b = setup(2);
    const t = range(0, 40);
    const d = a.core.route(t, { requestId: 'r1' });
    const hashes = a.core.lastLocalHashes();
    expect(hashes.length).toBe(10 * 8);
    const booking = { requestId: 'r1', worker: d.worker, dpRank: d.dpRank, promptTokens: t.length, overlapBlocks: d.overlapBlocks, hashes };
    expect(b.core.applyRemoteBooking('A', booking)).toBe(true);
    expect(b.core.applyRemoteBooking('A', booking)).toBe(false);
    expect(b.core.load()).toEqual(a.core.load());
    // B books its own request 'r1' too: a different booking.
    const mine = b.core.route(range(500, 40), { requestId: 'r1' });
    expect(mine.worker).not.toBe(d.worker);
    expect(b.core.stats()).toEqual({ booked: 1, freed: 0, expired: 0, active: 1 });
    expect(b.core.remoteStats()).toEqual({ booked: 1, freed: 0, expired: 0, dropped: 0, active: 1, replicas: [{ replica: 'A', requests: 1 }] });
    expect(b.core.markRemotePrefillCompleted('A', 'r1')).toBe(true);
    expect(b.core.freeRemote('A', 'r1')).toBe(true);
    expect(b.core.freeRemote('A', 'r1')).toBe(false);
    expect(b.core.free('r1')).toBe(true);
    expect(b.core.totals()).toEqual({ prefillTokens: 0, decodeBlocks: 0, requests: 0 });
  });

  it('drops every booking of a silent replica at once', () => {
    const b = setup(2);
    for (let i = 0; i < 5; i++)
      b.core.applyRemoteBooking('A', { requestId: `r${i}`, worker: i % 2, dpRank: 0, promptTokens: 8, overlapBlocks: 0, hashes: new Uint8Array(16) });
    b.core.applyRemoteBooking('B', { requestId: 'r0', worker: 1, dpRank: 0, promptTokens: 8, overlapBlocks: 0, hashes: new Uint8Array(0) });
    expect(b.core.dropReplica('A')).toBe(5);
    expect(b.core.remoteStats()).toMatchObject({ dropped: 5, active: 1, replicas: [{ replica: 'B', requests: 1 }] });
    expect(b.core.totals().requests).toBe(1);
  });

  it('records the decisions of other replicas in an approximate index', () => {
    const a = setup(2, { approximate: true }, 'approximate');
    const b = setup(2, { approximate: true }, 'approximate');
    const t = range(0, 16);
    const d = a.core.route(t, { requestId: 'x' });
    b.core.applyRemoteBooking('A', { requestId: 'x', worker: d.worker, dpRank: 0, promptTokens: 16, overlapBlocks: 0, hashes: a.core.lastLocalHashes() });
    expect(b.core.query(t).overlapBlocks).toBe(4);
    expect(b.core.query(t).worker).toBe(d.worker);
  });

  it('refuses bad announcements with TypeErrors and RangeErrors, booking nothing', () => {
    const { core } = setup(1);
    const ok = { requestId: 'x', worker: 0, dpRank: 0, promptTokens: 4, overlapBlocks: 0, hashes: new Uint8Array(8) };
    expect(() => core.applyRemoteBooking('', ok)).toThrow(RangeError);
    expect(() => core.applyRemoteBooking(7 as never, ok)).toThrow(TypeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, hashes: new Uint8Array(7) })).toThrow(RangeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, hashes: [1] as never })).toThrow(TypeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, worker: -1 })).toThrow(RangeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, dpRank: 70_000 })).toThrow(RangeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, promptTokens: 1.5 })).toThrow(RangeError);
    expect(() => core.applyRemoteBooking('A', { ...ok, requestId: '' })).toThrow(RangeError);
    expect(() => core.applyRemoteBooking('A', null as never)).toThrow(TypeError);
    expect(() => core.freeRemote('', 'x')).toThrow(RangeError);
    expect(core.remoteStats().booked).toBe(0);
    expect(core.totals().requests).toBe(0);
  });
});
