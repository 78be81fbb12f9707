// The wait limit's timer: a request in a queue whose pool never frees capacity (no first token,
// no arrival, no finished request: no turn of the queue) is still shed at its deadline. Node's
// timers are faked (with Date, the queue's clock here), so no test waits on the wall clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AdmissionQueue, type QueueSettings, type QueueTicket } from '../../../src/routing/queue/admission-queue.js';
import { Cancellation } from '../../../src/util/cancellation.js';

/** One worker, batch budget 100 tokens, booked past the threshold for good unless `free` is set. */
class StalledPool {
  booked = 150;
  started: string[] = [];

  queue(settings: Partial<QueueSettings>): AdmissionQueue {
    return new AdmissionQueue(
      'decode',
      { selectable: () => [1], get: () => ({ dpSize: 1, maxNumBatchedTokens: 100 }) },
      { load: () => [{ worker: 1, dpRank: 0, prefillTokens: this.booked }] },
      () => Date.now(),
      { threshold: 1, ...settings },
    );
  }

  ticket(id: string, signal = new Cancellation().signal): QueueTicket<string> {
    return {
      requestId: id,
      priority: 0,
      priorityJump: 0,
      uncachedTokens: () => 10,
      signal,
      start: () => {
        this.started.push(id);
        this.booked += 10;
        return `booked ${id}`;
      },
    };
  }
}

/** The outcome of a waiting request so far: pending, or how it ended. */
function track(p: unknown): { state: string; reason?: string } {
  const out: { state: string; reason?: string } = { state: 'pending' };
  (p as Promise<string>).then(
    () => void (out.state = 'started'),
    (err: { reason?: string; name: string }) => {
      out.state = err.name;
      out.reason = err.reason;
    },
  );
  return out;
}

describe('AdmissionQueue wait-limit timer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sheds a request of a stalled pool at maxWaitMs (429 expired), then re-arms for the next one', async () => {
    const pool = new StalledPool();
    const q = pool.queue({ maxWaitMs: 500 });
    const first = track(q.admit(pool.ticket('first')));
    await vi.advanceTimersByTimeAsync(200);
    const second = track(q.admit(pool.ticket('second')));
    expect(vi.getTimerCount()).toBe(1); // one timer per queue, not per request
    await vi.advanceTimersByTimeAsync(299);
    expect(first.state).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(first).toEqual({ state: 'QueueFullError', reason: 'expired' });
    expect(second.state).toBe('pending');
    expect(q.depth).toBe(1);
    expect(vi.getTimerCount()).toBe(1); // re-armed for `second`, due 200 ms later
    await vi.advanceTimersByTimeAsync(199);
    expect(second.state).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(second).toEqual({ state: 'QueueFullError', reason: 'expired' });
    // Nothing left waiting, nothing armed, nothing booked or started.
    expect(q.depth).toBe(0);
    expect(q.tokens).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(pool.started).toEqual([]);
    expect(pool.booked).toBe(150);
    expect(q.stats().rejected.expired).toBe(2);
  });

  it('re-arms for the new oldest when the oldest leaves (a client departure, its turn)', async () => {
    const pool = new StalledPool();
    const q = pool.queue({ maxWaitMs: 1000 });
    const client = new Cancellation();
    const gone = track(q.admit(pool.ticket('gone', client.signal)));
    await vi.advanceTimersByTimeAsync(600);
    const stays = track(q.admit(pool.ticket('stays')));
    client.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(gone.state).toBe('AbortError');
    // The deadline is now `stays`' (1600), not `gone`'s (1000).
    await vi.advanceTimersByTimeAsync(999);
    expect(stays.state).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(stays.reason).toBe('expired');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('clears the timer when the queue empties by dispatch, when the limit is turned off, and on close', async () => {
    const pool = new StalledPool();
    const q = pool.queue({ maxWaitMs: 1000 });
    const served = track(q.admit(pool.ticket('served')));
    expect(vi.getTimerCount()).toBe(1);
    pool.booked = 0;
    q.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(served.state).toBe('started');
    expect(vi.getTimerCount()).toBe(0);

    pool.booked = 150;
    const patient = track(q.admit(pool.ticket('patient')));
    expect(vi.getTimerCount()).toBe(1);
    q.update({ maxWaitMs: null }); // as PUT /admin/queue does
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(patient.state).toBe('pending');
    // Turned back on: applies to the one waiting, which is already past it.
    q.update({ maxWaitMs: 5000 });
    await vi.advanceTimersByTimeAsync(1);
    expect(patient.reason).toBe('expired');

    const last = track(q.admit(pool.ticket('last')));
    expect(vi.getTimerCount()).toBe(1);
    q.close(new Error('shutting down'));
    await vi.advanceTimersByTimeAsync(0);
    expect(last.state).toBe('Error');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sets no timer without a limit', async () => {
    const pool = new StalledPool();
    const q = pool.queue({});
    const p = track(q.admit(pool.ticket('a')));
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1e9);
    expect(p.state).toBe('pending');
  });
});
