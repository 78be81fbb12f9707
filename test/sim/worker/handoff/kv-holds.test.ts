import { afterEach, describe, expect, it, vi } from 'vitest';
import { KvHolds } from '../../../../src/sim/worker/handoff/kv-holds.js';

afterEach(() => {
  vi.useRealTimers();
});

function holds(holdMs = 1_000) {
  const released: string[] = [];
  return { h: new KvHolds({ holdMs, release: (id) => released.push(id) }), released };
}
const held = (id: string) => ({ engineRequestId: id, promptTokens: 40, blockIds: [1, 2, 3] });

describe('KvHolds', () => {
  it('hands a finished prefill to exactly one pull and releases its blocks then', async () => {
    const { h, released } = holds();
    expect(h.open('k', 'r1')).toBe(true);
    h.ready('k', held('r1'));
    expect(released).toEqual([]);
    const r = await h.pull('k', 0);
    expect(r).toEqual({ ok: true, held: held('r1') });
    expect(released).toEqual(['r1']);
    expect(await h.pull('k', 0)).toMatchObject({ ok: false, status: 404 });
    expect(h.counters()).toMatchObject({ held: 1, pulled: 1, active: 0 });
  });

  it('refuses a key that is already open', () => {
    const { h } = holds();
    expect(h.open('k', 'r1')).toBe(true);
    expect(h.open('k', 'r2')).toBe(false);
  });

  it('lets a pull wait for a prefill that has not started or finished yet', async () => {
    const { h, released } = holds();
    const early = h.pull('room:5', 10_000);
    h.open('room:5', 'r1');
    h.ready('room:5', held('r1'));
    expect(await early).toEqual({ ok: true, held: held('r1') });
    expect(released).toEqual(['r1']);
  });

  it('tells a second waiter for the same key that the prefill was taken', async () => {
    const { h } = holds();
    const a = h.pull('k', 10_000);
    const b = h.pull('k', 10_000);
    h.open('k', 'r1');
    h.ready('k', held('r1'));
    expect(await a).toMatchObject({ ok: true });
    expect(await b).toMatchObject({ ok: false, status: 410 });
  });

  it('fails a waiting pull when its prefill fails, releasing the blocks', async () => {
    const { h, released } = holds();
    h.open('k', 'r1');
    const p = h.pull('k', 10_000);
    h.fail('k', 'the prefill was aborted');
    expect(await p).toEqual({ ok: false, status: 410, reason: 'the prefill was aborted' });
    expect(released).toEqual(['r1']);
  });

  it('times out a pull whose prefill never comes', async () => {
    vi.useFakeTimers();
    const { h } = holds();
    const p = h.pull('room:9', 500);
    vi.advanceTimersByTime(500);
    expect(await p).toMatchObject({ ok: false, status: 404, reason: expect.stringMatching(/within 500 ms/) });
  });

  it('releases a held prefill nobody pulls after holdMs', async () => {
    vi.useFakeTimers();
    const { h, released } = holds(2_000);
    h.open('k', 'r1');
    h.ready('k', held('r1'));
    vi.advanceTimersByTime(1_999);
    expect(released).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(released).toEqual(['r1']);
    expect(h.counters()).toMatchObject({ expired: 1, active: 0 });
    expect(await h.pull('k', 0)).toMatchObject({ ok: false, status: 404 });
  });

  it('cancels a waiting pull through its signal', async () => {
    const { h } = holds();
    const ac = new AbortController();
    const p = h.pull('k', 10_000, ac.signal);
    ac.abort();
    expect(await p).toMatchObject({ ok: false, status: 409 });
    // A later prefill for the key is held normally.
    h.open('k', 'r1');
    h.ready('k', held('r1'));
    expect(h.size).toBe(1);
  });

  it('clears everything on restart, failing waiters', async () => {
    const { h, released } = holds();
    h.open('a', 'r1');
    h.ready('a', held('r1'));
    const waiting = h.pull('b', 10_000);
    h.clear('the engine restarted');
    expect(await waiting).toMatchObject({ ok: false, status: 410 });
    expect(h.size).toBe(0);
    // The old engine's blocks are gone with it: nothing to release in the new one.
    expect(released).toEqual([]);
  });
});
