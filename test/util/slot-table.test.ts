import { describe, expect, it } from 'vitest';
import { SlotTable } from '../../src/util/slot-table.js';

describe('SlotTable', () => {
  it('reuses freed slots and counts what it holds', () => {
    const t = new SlotTable<{ n: number }>();
    const a = { n: 1 };
    const b = { n: 2 };
    const sa = t.add(a);
    const sb = t.add(b);
    expect(t.size).toBe(2);
    expect(t.get(sa)).toBe(a);
    expect(t.release(sa, a)).toBe(true);
    expect(t.get(sa)).toBeUndefined();
    expect(t.size).toBe(1);
    const c = { n: 3 };
    expect(t.add(c)).toBe(sa);
    expect(t.values()).toEqual([c, b]);
    expect(sb).not.toBe(sa);
  });

  it('a second release, or one with another entry, frees nothing', () => {
    const t = new SlotTable<object>();
    const a = {};
    const slot = t.add(a);
    expect(t.release(slot, a)).toBe(true);
    const b = {};
    expect(t.add(b)).toBe(slot);
    // a's late second release must not free b's slot
    expect(t.release(slot, a)).toBe(false);
    expect(t.get(slot)).toBe(b);
    expect(t.release(99, b)).toBe(false);
    expect(t.size).toBe(1);
  });

  it('holds steady under churn: the array grows only to the most entries held at once', () => {
    const t = new SlotTable<number[]>();
    const live: Array<[number, number[]]> = [];
    for (let i = 0; i < 10_000; i++) {
      const v = [i];
      live.push([t.add(v), v]);
      if (live.length > 8) {
        const [slot, old] = live.shift()!;
        expect(t.release(slot, old)).toBe(true);
      }
    }
    expect(t.size).toBe(8);
    expect(t.values().length).toBe(8);
    // Nine at once at most (the ninth added before the oldest left): slots 0..8.
    expect(Math.max(...live.map(([s]) => s))).toBeLessThanOrEqual(8);
  });

  it('values() is a copy: releasing while iterating it skips nothing', () => {
    const t = new SlotTable<string>();
    const slots = ['a', 'b', 'c'].map((v) => [t.add(v), v] as const);
    const seen: string[] = [];
    for (const v of t.values()) {
      seen.push(v);
      const [slot] = slots.find(([, x]) => x === v)!;
      t.release(slot, v);
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(t.size).toBe(0);
  });
});
