import { describe, expect, it, vi } from 'vitest';
import { InFlight } from '../../../src/server/app/inflight.js';

describe('InFlight', () => {
  it('counts the requests in flight, each done once however often it is called', () => {
    const f = new InFlight();
    const a = f.begin();
    const b = f.begin();
    expect(f.size).toBe(2);
    a.done();
    a.done();
    expect(f.size).toBe(1);
    b.done();
    expect(f.size).toBe(0);
  });

  it('idle() resolves at once when nothing is in flight, else when the last request is done', async () => {
    const f = new InFlight();
    await f.idle();
    const a = f.begin();
    const b = f.begin();
    let idle = false;
    const waiting = f.idle().then(() => (idle = true));
    a.done();
    await Promise.resolve();
    expect(idle).toBe(false);
    b.done();
    await waiting;
    expect(idle).toBe(true);
  });

  it('cutAll() cuts exactly the requests still running, also after their slots were reused', () => {
    const f = new InFlight();
    const cuts = Array.from({ length: 6 }, () => vi.fn());
    const entries = cuts.map((cut) => {
      const e = f.begin();
      e.onCut(cut);
      return e;
    });
    // Free three slots, then start two requests that take two of them again.
    entries[1].done();
    entries[3].done();
    entries[4].done();
    const late = [vi.fn(), vi.fn()];
    const lateEntries = late.map((cut) => {
      const e = f.begin();
      e.onCut(cut);
      return e;
    });
    expect(f.size).toBe(5);
    // A finished request's handle stays finished when its slot is reused.
    entries[1].done();
    expect(f.size).toBe(5);
    expect(f.cutAll()).toBe(5);
    for (const i of [0, 2, 5]) expect(cuts[i]).toHaveBeenCalledTimes(1);
    for (const i of [1, 3, 4]) expect(cuts[i]).not.toHaveBeenCalled();
    for (const cut of late) expect(cut).toHaveBeenCalledTimes(1);
    lateEntries.forEach((e) => e.done());
    [0, 2, 5].forEach((i) => entries[i].done());
    expect(f.size).toBe(0);
  });

  it('counts a request with no cut yet in cutAll() without calling anything', () => {
    const f = new InFlight();
    f.begin();
    expect(f.cutAll()).toBe(1);
  });
});
