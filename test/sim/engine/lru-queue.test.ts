import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LruQueue } from '../../../src/sim/engine/lru-queue.js';

describe('LruQueue', () => {
  it('takes blocks oldest first, skipping removed ones, and refuses a block queued twice', () => {
    const q = new LruQueue(4);
    for (const b of [2, 0, 3]) q.push(b);
    expect(q.remove(0)).toBe(true);
    expect(q.remove(0)).toBe(false);
    q.push(0); // now the newest
    expect(() => q.push(3)).toThrow(/queued already/);
    expect([q.size, q.has(3), q.has(1)]).toEqual([3, true, false]);
    expect([q.shift(), q.shift(), q.shift(), q.shift()]).toEqual([2, 3, 0, -1]);
    expect(q.size).toBe(0);
  });

  it('agrees with a plain list under any mix of pushes, removals and shifts, through compactions', () => {
    const op = fc.oneof(
      fc.tuple(fc.constant('push' as const), fc.integer({ min: 0, max: 7 })),
      fc.tuple(fc.constant('remove' as const), fc.integer({ min: 0, max: 7 })),
      fc.tuple(fc.constant('shift' as const), fc.constant(0)),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        // Eight blocks in an array of sixteen entries: long runs compact many times.
        const q = new LruQueue(8);
        const ref: number[] = [];
        for (const [kind, b] of ops) {
          if (kind === 'push') {
            if (ref.includes(b)) continue;
            q.push(b);
            ref.push(b);
          } else if (kind === 'remove') {
            const i = ref.indexOf(b);
            expect(q.remove(b)).toBe(i >= 0);
            if (i >= 0) ref.splice(i, 1);
          } else {
            expect(q.shift()).toBe(ref.length > 0 ? ref.shift() : -1);
          }
          expect(q.size).toBe(ref.length);
        }
        const rest: number[] = [];
        for (let b = q.shift(); b !== -1; b = q.shift()) rest.push(b);
        expect(rest).toEqual(ref);
      }),
      { numRuns: 300 },
    );
  });
});
