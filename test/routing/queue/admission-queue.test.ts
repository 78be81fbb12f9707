import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpressureError } from '../../../src/core/routing-errors.js';
import { Cancellation } from '../../../src/util/cancellation.js';
import { AdmissionQueue, type QueueEvent, QueueFullError, type QueueSettings, type QueueTicket } from '../../../src/routing/queue/admission-queue.js';
import { leavesBefore, scoreOf } from '../../../src/routing/queue/queue-order.js';

/** Two workers with a batch budget of 100 tokens; bookings are plain numbers per worker. */
class World {
  now = 0;
  booked = new Map<number, number>([
    [1, 0],
    [2, 0],
  ]);
  selectable = [1, 2];
  batch = new Map<number, number>([
    [1, 100],
    [2, 100],
  ]);
  events: QueueEvent[] = [];
  started: string[] = [];

  queue(settings: Partial<QueueSettings> = {}): AdmissionQueue {
    return new AdmissionQueue(
      'decode',
      { selectable: () => this.selectable, get: (w) => (this.batch.has(w) ? { dpSize: 1, maxNumBatchedTokens: this.batch.get(w) } : undefined) },
      { load: () => [...this.booked].map(([worker, prefillTokens]) => ({ worker, dpRank: 0, prefillTokens })) },
      () => this.now,
      { threshold: 1, ...settings },
      (ev) => this.events.push(ev),
    );
  }

  /** Ten requests of 100 tokens through `q`, one every 100 ms (a drain rate of 1 token/ms); both workers left saturated. */
  async drain(q: AdmissionQueue): Promise<void> {
    this.saturate();
    for (let i = 0; i < 10; i++) {
      void q.admit(this.ticket(`r${i}`, { uncached: 100 }));
      this.now += 100;
      this.booked.set(1, 0);
      q.wake();
      await settle();
      this.saturate();
    }
  }

  /** Fills both workers past the threshold (1 x 100 tokens). */
  saturate(): void {
    for (const w of this.booked.keys()) this.booked.set(w, 150);
  }

  ticket(id: string, o: Partial<QueueTicket<string>> & { uncached?: number; books?: number; worker?: number } = {}): QueueTicket<string> {
    return {
      requestId: id,
      priority: o.priority ?? 0,
      priorityJump: o.priorityJump ?? 0,
      uncachedTokens: () => o.uncached ?? 10,
      pinnedWorker: o.pinnedWorker,
      signal: o.signal ?? new Cancellation().signal,
      start: () => {
        this.started.push(id);
        const w = o.worker ?? o.pinnedWorker ?? 1;
        this.booked.set(w, this.booked.get(w)! + (o.books ?? 0));
        return `booked ${id}`;
      },
    };
  }
}

const settle = () => new Promise((r) => setImmediate(r));

describe('AdmissionQueue', () => {
  it('starts at once (synchronously) when off, or when a worker is under the threshold and nobody waits', () => {
    const w = new World();
    const off = w.queue({ threshold: null });
    w.saturate();
    expect(off.admit(w.ticket('a'))).toBe('booked a');
    const on = w.queue();
    w.booked.set(2, 100); // at the threshold is not over it
    expect(on.admit(w.ticket('b'))).toBe('booked b');
    expect(on.depth).toBe(0);
  });

  it('holds requests while every worker is over the threshold and releases them as load drops, fcfs', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    const got: string[] = [];
    for (const id of ['a', 'b', 'c']) {
      w.now += 10;
      void (q.admit(w.ticket(id, { books: 60 })) as Promise<string>).then((v) => got.push(v));
    }
    await settle();
    expect(w.started).toEqual([]);
    expect(q.depth).toBe(3);
    // Worker 1 drops to 50: one request fits (it books 60, taking it to 110, over again).
    w.booked.set(1, 50);
    q.wake();
    await settle();
    expect(got).toEqual(['booked a']);
    w.booked.set(2, 0);
    q.wake();
    await settle();
    // Worker 2 has room: b and c start (each booking on worker 1; worker 2 stays under).
    expect(w.started).toEqual(['a', 'b', 'c']);
    expect(q.depth).toBe(0);
    expect(w.events.filter((e) => e.type === 'dispatched').map((e) => (e as { waitMs: number }).waitMs)).toEqual([20, 10, 0]);
  });

  it('serves higher priority classes first, then the policy order: fcfs with a jump, lcfs, wspt', async () => {
    const order = async (settings: Partial<QueueSettings>, tickets: Array<[string, Partial<QueueTicket<string>> & { uncached?: number }]>) => {
      const w = new World();
      const q = w.queue(settings);
      w.saturate();
      for (const [id, o] of tickets) {
        w.now += 1000;
        void q.admit(w.ticket(id, o));
      }
      await settle();
      w.booked.set(1, 0);
      q.wake();
      await settle();
      return w.started;
    };
    expect(
      await order({ policy: 'fcfs' }, [
        ['a', {}],
        ['b', { priorityJump: 1.5 }],
        ['c', {}],
        ['d', { priority: 1 }],
      ]),
    ).toEqual(['d', 'b', 'a', 'c']);
    expect(
      await order({ policy: 'lcfs' }, [
        ['a', {}],
        ['b', {}],
        ['c', { priorityJump: -0 }],
      ]),
    ).toEqual(['c', 'b', 'a']);
    expect(
      await order({ policy: 'wspt' }, [
        ['long', { uncached: 5000 }],
        ['short', { uncached: 100 }],
        ['heavy', { uncached: 1000, priorityJump: 20 }],
      ]),
    ).toEqual(['heavy', 'short', 'long']);
  });

  it('wspt re-keys the head at dequeue: a head whose cached prefix was evicted meanwhile lets a cheaper one go first', async () => {
    const w = new World();
    const q = w.queue({ policy: 'wspt' });
    w.saturate();
    let evicted = false;
    const a = w.ticket('a');
    a.uncachedTokens = () => (evicted ? 5000 : 100);
    void q.admit(a);
    void q.admit(w.ticket('b', { uncached: 200 }));
    expect(q.tokens).toBe(300);
    await settle();
    evicted = true; // a's prefix left every worker's cache while it waited
    w.booked.set(1, 0);
    q.wake();
    await settle();
    expect(w.started).toEqual(['b', 'a']);
  });

  it('queues a newcomer behind waiting requests even when a worker has room (no bypass)', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    void q.admit(w.ticket('first'));
    await settle();
    w.booked.set(1, 0);
    const second = q.admit(w.ticket('second'));
    expect(second).toBeInstanceOf(Promise);
    await settle();
    expect(w.started).toEqual(['first', 'second']);
  });

  it('looks only at the pinned worker of a pinned request, and the head of the line blocks the rest', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    w.booked.set(2, 0); // worker 2 has room, worker 1 not
    expect(q.admit(w.ticket('free'))).toBe('booked free');
    const pinned = q.admit(w.ticket('pinned', { pinnedWorker: 1 }));
    expect(pinned).toBeInstanceOf(Promise);
    void q.admit(w.ticket('after'));
    await settle();
    expect(w.started).toEqual(['free']);
    w.booked.set(1, 0);
    q.wake();
    await settle();
    expect(w.started).toEqual(['free', 'pinned', 'after']);
    // A pinned worker that is not selectable: routing decides (its refusal), the queue does not hold it.
    w.saturate();
    w.selectable = [2];
    expect(q.admit(w.ticket('gone', { pinnedWorker: 1 }))).toBe('booked gone');
  });

  it('drops a request whose client left at once: AbortError, nothing started, its tokens gone', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    const client = new Cancellation();
    const p = q.admit(w.ticket('leaver', { signal: client.signal, uncached: 77 })) as Promise<string>;
    void q.admit(w.ticket('stayer'));
    expect(q.tokens).toBe(87);
    w.now = 30;
    client.abort();
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(q.depth).toBe(1);
    expect(q.tokens).toBe(10);
    expect(q.stats()).toMatchObject({ dropped: 1, byPriority: [{ priority: 0, depth: 1 }] });
    w.booked.set(1, 0);
    q.wake();
    await settle();
    expect(w.started).toEqual(['stayer']);
    // A signal that had fired before: refused before it ever waits.
    const gone = new Cancellation();
    gone.abort();
    w.saturate();
    expect(() => q.admit(w.ticket('late', { signal: gone.signal }))).toThrow(/abort/i);
  });

  it('refuses beyond its bounds with a 429-style QueueFullError, a higher-ranked newcomer displacing the worst', async () => {
    const w = new World();
    const q = w.queue({ maxRequests: 2, maxTokens: 1000 });
    w.saturate();
    const low = q.admit(w.ticket('low1')) as Promise<string>;
    const displaced = q.admit(w.ticket('low2')) as Promise<string>;
    let err: unknown;
    try {
      q.admit(w.ticket('low3'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QueueFullError);
    expect(err).toBeInstanceOf(BackpressureError);
    expect(err).toMatchObject({ code: 'queue_full', reason: 'queue_full_requests' });
    expect((err as QueueFullError).retryAfterMs).toBeGreaterThanOrEqual(1000);
    // A high-priority newcomer takes the place of the worst (low2, the latest of its class).
    const high = q.admit(w.ticket('high', { priority: 5 }));
    expect(high).toBeInstanceOf(Promise);
    expect(q.depth).toBe(2);
    expect(q.stats().rejected).toEqual({ queue_full_requests: 1, queue_full_tokens: 0, displaced: 1, wait_too_long: 0, expired: 0 });
    await expect(displaced).rejects.toMatchObject({ code: 'queue_full', reason: 'displaced' });
    w.booked.set(1, 0);
    q.wake();
    await settle();
    expect(w.started).toEqual(['high', 'low1']);
    await expect(low).resolves.toBe('booked low1');
    // Tokens: one request larger than the whole budget never enters.
    w.saturate();
    expect(() => q.admit(w.ticket('huge', { uncached: 5000, priority: 9 }))).toThrow(QueueFullError);
    void q.admit(w.ticket('t1', { uncached: 600 }));
    expect(() => q.admit(w.ticket('t2', { uncached: 600 }))).toThrow(expect.objectContaining({ reason: 'queue_full_tokens' }));
  });

  it('rejects a request with what its start throws, and goes on with the next', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    const bad = w.ticket('bad');
    bad.start = () => {
      throw new RangeError('no such worker');
    };
    const p = q.admit(bad) as Promise<string>;
    const ok = q.admit(w.ticket('ok')) as Promise<string>;
    w.booked.set(1, 0);
    q.wake();
    await expect(p).rejects.toThrow('no such worker');
    await expect(ok).resolves.toBe('booked ok');
  });

  it('applies settings at runtime, checked whole: off releases everyone, a bad value changes nothing', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    void q.admit(w.ticket('a'));
    void q.admit(w.ticket('b'));
    expect(() => q.update({ threshold: -1 })).toThrow(RangeError);
    expect(() => q.update({ policy: 'random' as never })).toThrow(RangeError);
    expect(() => q.update({ maxRequests: 0 })).toThrow(RangeError);
    expect(q.settings.threshold).toBe(1);
    await settle();
    expect(w.started).toEqual([]);
    q.update({ threshold: 2 }); // 150 <= 2 x 100: room
    await settle();
    expect(w.started).toEqual(['a', 'b']);
    q.update({ threshold: null });
    expect(q.admit(w.ticket('c'))).toBe('booked c');
  });

  it('re-keys waiting requests when the policy changes', async () => {
    const w = new World();
    const q = w.queue({ policy: 'fcfs' });
    w.saturate();
    for (const id of ['a', 'b', 'c']) {
      w.now += 1;
      void q.admit(w.ticket(id));
    }
    q.update({ policy: 'lcfs' });
    w.booked.set(1, 0);
    q.wake();
    await settle();
    expect(w.started).toEqual(['c', 'b', 'a']);
  });

  it('refuses everyone waiting, and everyone after, once closed', async () => {
    const w = new World();
    const q = w.queue();
    w.saturate();
    const p = q.admit(w.ticket('a')) as Promise<string>;
    q.close(new Error('shutting down'));
    await expect(p).rejects.toThrow('shutting down');
    expect(() => q.admit(w.ticket('b'))).toThrow('shutting down');
    expect(q.depth).toBe(0);
  });

  it('estimates Retry-After from the recent drain rate', async () => {
    const w = new World();
    const q = w.queue({ maxRequests: 3 });
    await w.drain(q);
    for (const id of ['x', 'y', 'z']) void q.admit(w.ticket(id, { uncached: 1500 }));
    let err: QueueFullError | undefined;
    try {
      q.admit(w.ticket('over'));
    } catch (e) {
      err = e as QueueFullError;
    }
    // 4500 tokens waiting at ~1 token/ms.
    expect(err!.retryAfterMs).toBeGreaterThan(3500);
    expect(err!.retryAfterMs).toBeLessThan(6000);
  });

  describe('maxWaitMs', () => {
    it('refuses at arrival a request whose estimated wait (tokens ranked before it over the drain rate) passes the limit', async () => {
      const w = new World();
      const q = w.queue({ maxWaitMs: 1000, policy: 'wspt' });
      await w.drain(q);
      const waiting = q.admit(w.ticket('big', { uncached: 1500 })) as Promise<string>;
      waiting.catch(() => {});
      // 1500 tokens before it at ~1 token/ms: about 1.5 s, over 1 s.
      expect(() => q.admit(w.ticket('long', { uncached: 2000 }))).toThrow(
        expect.objectContaining({ name: 'QueueFullError', reason: 'wait_too_long', code: 'queue_full' }),
      );
      // A shorter one ranks before the 1500-token request under wspt: nothing waits before it.
      const short = q.admit(w.ticket('short', { uncached: 50 }));
      expect(short).toBeInstanceOf(Promise);
      (short as Promise<string>).catch(() => {});
      // A higher class ranks before everything waiting.
      (q.admit(w.ticket('urgent', { uncached: 3000, priority: 1 })) as Promise<string>).catch(() => {});
      expect(q.stats().rejected.wait_too_long).toBe(1);
      expect(q.depth).toBe(3);
    });

    it('sheds a request that waited the limit at the next turn (429 expired, Retry-After), never starting it', async () => {
      const w = new World();
      const q = w.queue({ maxWaitMs: 500 });
      w.saturate();
      const old = q.admit(w.ticket('old')) as Promise<string>;
      w.now += 300;
      const young = q.admit(w.ticket('young')) as Promise<string>;
      w.now += 200; // old has waited 500 ms, young 200
      q.wake();
      await expect(old).rejects.toMatchObject({ name: 'QueueFullError', reason: 'expired', retryAfterMs: expect.any(Number) });
      expect(q.depth).toBe(1);
      expect(q.tokens).toBe(10);
      w.booked.set(2, 0);
      q.wake();
      await expect(young).resolves.toBe('booked young');
      expect(w.started).toEqual(['young']);
      expect(q.stats().rejected.expired).toBe(1);
      expect(w.events).toContainEqual({ type: 'rejected', priority: 0, reason: 'expired' });
    });

    it('has no limit by default, and a bad limit is refused by name with nothing changed', async () => {
      const w = new World();
      const q = w.queue();
      expect(q.settings.maxWaitMs).toBeNull();
      for (const bad of [-1, Number.NaN, Infinity, '5' as unknown as number]) expect(() => q.update({ maxWaitMs: bad })).toThrow(/maxWaitMs/);
      expect(q.settings.maxWaitMs).toBeNull();
      w.saturate();
      const p = q.admit(w.ticket('patient')) as Promise<string>;
      w.now += 1e9;
      q.wake();
      await settle();
      expect(q.depth).toBe(1);
      q.update({ maxWaitMs: 1000 }); // applies to those waiting at once
      await expect(p).rejects.toMatchObject({ reason: 'expired' });
    });
  });

  it('dispatches in the order of a sorted model, whatever arrives, leaves or frees capacity', async () => {
    const actionArb = fc.oneof(
      fc.record({
        kind: fc.constant('arrive' as const),
        priority: fc.integer({ min: 0, max: 2 }),
        jump: fc.integer({ min: 0, max: 3 }),
        uncached: fc.integer({ min: 1, max: 500 }),
      }),
      fc.record({ kind: fc.constant('leave' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('free' as const), slots: fc.integer({ min: 1, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('fcfs' as const, 'lcfs' as const, 'wspt' as const), fc.array(actionArb, { maxLength: 60 }), async (policy, actions) => {
        const w = new World();
        w.selectable = [1];
        w.booked = new Map([[1, 150]]);
        let capacity = 0; // requests that may start before the worker is over again
        const q = new AdmissionQueue(
          'p',
          { selectable: () => [1], get: () => ({ dpSize: 1, maxNumBatchedTokens: 100 }) },
          { load: () => [{ worker: 1, dpRank: 0, prefillTokens: capacity > 0 ? 0 : 150 }] },
          () => w.now,
          { threshold: 1, policy },
        );
        const model: Array<{ id: string; priority: number; score: number; seq: number; client: Cancellation }> = [];
        const started: string[] = [];
        const expected: string[] = [];
        let seq = 0;
        for (const a of actions) {
          w.now += 7;
          if (a.kind === 'arrive') {
            const id = `r${seq}`;
            const client = new Cancellation();
            const t: QueueTicket<void> = {
              requestId: id,
              priority: a.priority,
              priorityJump: a.jump,
              uncachedTokens: () => a.uncached,
              signal: client.signal,
              start: () => {
                started.push(id);
                capacity--;
              },
            };
            const r = q.admit(t);
            if (r instanceof Promise) {
              r.catch(() => {});
              model.push({
                id,
                priority: a.priority,
                score: scoreOf(policy, { arrivalMs: w.now, priorityJump: a.jump, uncachedTokens: a.uncached }),
                seq: seq,
                client,
              });
            } else expected.push(id);
            seq++;
          } else if (a.kind === 'leave') {
            if (model.length === 0) continue;
            const m = model.splice(a.pick % model.length, 1)[0];
            m.client.abort();
          } else {
            capacity = a.slots;
            q.wake();
            await settle();
            model.sort((x, y) => (leavesBefore(x, y) ? -1 : 1));
            expected.push(...model.splice(0, a.slots).map((m) => m.id));
            capacity = 0;
          }
          expect(started).toEqual(expected);
          expect(q.depth).toBe(model.length);
        }
      }),
      { numRuns: 150 },
    );
  });
});
