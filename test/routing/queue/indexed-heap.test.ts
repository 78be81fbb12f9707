import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IndexedHeap } from '../../../src/routing/queue/indexed-heap.js';

interface Item {
  id: number;
  key: number;
  at: number;
  other: number;
}

const byKey = (a: Item, b: Item) => a.key < b.key || (a.key === b.key && a.id < b.id);
const heapOf = () => new IndexedHeap<Item>(byKey, { get: (x) => x.at, set: (x, i) => void (x.at = i) });
const item = (id: number, key: number): Item => ({ id, key, at: -1, other: -1 });

/** The model: a plain array, its minimum found by scanning. */
function modelMin(items: Item[]): Item | undefined {
  let best: Item | undefined;
  for (const x of items) if (!best || byKey(x, best)) best = x;
  return best;
}

type Op = { op: 'push'; key: number } | { op: 'pop' } | { op: 'remove'; pick: number } | { op: 'rekey'; pick: number; key: number } | { op: 'peek' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('push' as const), key: fc.integer({ min: -50, max: 50 }) }),
  fc.record({ op: fc.constant('pop' as const) }),
  fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('rekey' as const), pick: fc.nat(), key: fc.integer({ min: -50, max: 50 }) }),
  fc.record({ op: fc.constant('peek' as const) }),
);

describe('IndexedHeap', () => {
  it('behaves as a scanned array under any sequence of push, pop, remove, re-key and peek', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        const heap = heapOf();
        const model: Item[] = [];
        const removed: Item[] = [];
        let next = 0;
        for (const o of ops) {
          switch (o.op) {
            case 'push': {
              const x = item(next++, o.key);
              heap.push(x);
              model.push(x);
              break;
            }
            case 'pop': {
              const want = modelMin(model);
              expect(heap.pop()).toBe(want);
              if (want) {
                model.splice(model.indexOf(want), 1);
                removed.push(want);
              }
              break;
            }
            case 'remove': {
              // Sometimes an item that is no longer there: remove says false and changes nothing.
              const pool = [...model, ...removed];
              if (pool.length === 0) break;
              const x = pool[o.pick % pool.length];
              const inside = model.includes(x);
              expect(heap.remove(x)).toBe(inside);
              if (inside) {
                model.splice(model.indexOf(x), 1);
                removed.push(x);
              }
              break;
            }
            case 'rekey': {
              if (model.length === 0) break;
              const x = model[o.pick % model.length];
              x.key = o.key;
              heap.update(x);
              break;
            }
            case 'peek':
              expect(heap.peek()).toBe(modelMin(model));
              break;
          }
          expect(heap.size).toBe(model.length);
          for (const x of model) expect(heap.has(x)).toBe(true);
          for (const x of removed) expect(heap.has(x)).toBe(false);
        }
        // Draining gives the model's order.
        const drained: Item[] = [];
        for (let x = heap.pop(); x; x = heap.pop()) drained.push(x);
        expect(drained).toEqual([...model].sort((a, b) => (byKey(a, b) ? -1 : 1)));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps one item in two heaps of opposite orders through their own slots', () => {
    const low = heapOf();
    const high = new IndexedHeap<Item>((a, b) => byKey(b, a), { get: (x) => x.other, set: (x, i) => void (x.other = i) });
    const items = [5, 1, 9, 3, 7].map((k, i) => item(i, k));
    for (const x of items) {
      low.push(x);
      high.push(x);
    }
    expect(low.peek()!.key).toBe(1);
    expect(high.peek()!.key).toBe(9);
    const nine = high.pop()!;
    expect(low.remove(nine)).toBe(true);
    expect([low.size, high.size]).toEqual([4, 4]);
    expect(high.peek()!.key).toBe(7);
  });

  it('refuses an item twice, and re-keying one it does not hold', () => {
    const heap = heapOf();
    const x = item(1, 1);
    heap.push(x);
    expect(() => heap.push(x)).toThrow(RangeError);
    expect(() => heap.update(item(2, 2))).toThrow(RangeError);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(heap.has(x)).toBe(false);
    heap.push(x);
    expect(heap.pop()).toBe(x);
  });
});
