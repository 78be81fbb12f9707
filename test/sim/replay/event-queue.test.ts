import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventQueue } from '../../../src/sim/replay/event-queue.js';
import { summarize } from '../../../src/sim/replay/stats.js';

describe('EventQueue', () => {
  it('pops in time order, ties in insertion order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const q = new EventQueue<number>();
        times.forEach((t, i) => q.push(t, i));
        const popped: Array<[number, number]> = [];
        for (let e = q.pop(); e; e = q.pop()) popped.push([e.time, e.item]);
        const expected = times.map((t, i) => [t, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        expect(popped).toEqual(expected);
        expect(q.peekTime()).toBe(Infinity);
      }),
    );
  });
});

describe('stats', () => {
  it('summarises with interpolated percentiles', () => {
    const s = summarize([5, 1, 3]);
    expect(s).toMatchObject({ p50: 3, mean: 3, count: 3 });
    expect(summarize([10, 0])).toMatchObject({ p50: 5, p90: 9 });
  });
});
