import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SteadyMap } from '../../src/util/steady-map.js';

describe('SteadyMap', () => {
  it('sets, gets, replaces and deletes by key; a second delete finds nothing', () => {
    const m = new SteadyMap<number>();
    m.set('a', 1).set('b', 2);
    m.set('a', 3);
    expect(m.size).toBe(2);
    expect(m.get('a')).toBe(3);
    expect(m.has('b')).toBe(true);
    expect(m.get('c')).toBeUndefined();
    expect(m.delete('a')).toBe(true);
    expect(m.delete('a')).toBe(false);
    expect(m.has('a')).toBe(false);
    expect(m.get('b')).toBe(2);
    expect(m.size).toBe(1);
  });

  it('keeps its storage while entries come and go at a steady count: the slots are reused, never reallocated', () => {
    const m = new SteadyMap<{ id: number }>();
    // 64 in flight, a 65th arriving before the oldest leaves.
    for (let i = 0; i < 65; i++) m.set(`req-${i}`, { id: i });
    m.delete('req-0');
    const capacity = m.capacity;
    const storage = (m as unknown as { keys: unknown[] }).keys;
    let missing = 0;
    for (let i = 65; i < 100_000; i++) {
      m.set(`req-${i}`, { id: i });
      if (!m.delete(`req-${i - 64}`)) missing++;
    }
    expect(missing).toBe(0);
    expect(m.size).toBe(64);
    expect(m.capacity).toBe(capacity);
    expect((m as unknown as { keys: unknown[] }).keys).toBe(storage);
    expect(
      m
        .values()
        .map((v) => v.id)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 64 }, (_, i) => 99_936 + i));
  });

  it('grows to at least twice its entries, and what a growth left behind holds no entry', () => {
    const m = new SteadyMap<object>();
    const first = m as unknown as { keys: unknown[]; vals: unknown[] };
    const [keys, vals] = [first.keys, first.vals];
    for (let i = 0; i < 1000; i++) m.set(String(i), {});
    expect(m.capacity).toBeGreaterThanOrEqual(2000);
    expect(keys.every((k) => k === undefined)).toBe(true);
    expect(vals.every((v) => v === undefined)).toBe(true);
    for (let i = 0; i < 1000; i++) expect(m.has(String(i))).toBe(true);
  });

  it('values() is a snapshot: deleting while reading it misses nothing', () => {
    const m = new SteadyMap<string>();
    for (let i = 0; i < 300; i++) m.set(`k${i}`, `k${i}`);
    const seen: string[] = [];
    for (const v of m.values()) {
      seen.push(v);
      m.delete(v);
    }
    expect(seen.sort()).toEqual(Array.from({ length: 300 }, (_, i) => `k${i}`).sort());
    expect(m.size).toBe(0);
    expect(m.values()).toEqual([]);
  });

  it('clear() empties it and it serves on', () => {
    const m = new SteadyMap<number>();
    for (let i = 0; i < 40; i++) m.set(`x${i}`, i);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.has('x1')).toBe(false);
    m.set('x1', 7);
    expect(m.get('x1')).toBe(7);
  });

  it('refuses a key that is not a string (TypeError), unchanged', () => {
    const m = new SteadyMap<number>();
    m.set('a', 1);
    for (const bad of [1, undefined, null, {}, Symbol('s')]) {
      expect(() => m.set(bad as unknown as string, 2)).toThrow(TypeError);
      expect(() => m.get(bad as unknown as string)).toThrow(TypeError);
      expect(() => m.delete(bad as unknown as string)).toThrow(TypeError);
    }
    expect(m.size).toBe(1);
    expect(m.values()).toEqual([1]);
  });

  it('agrees with a Map over any sequence of sets and deletes (keys from a small alphabet: collisions and wrap-around)', () => {
    const key = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'é', '\u{1F600}'), maxLength: 4 });
    const op = fc.oneof(fc.record({ set: key, value: fc.integer() }), fc.record({ del: key }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const m = new SteadyMap<number>();
        const ref = new Map<string, number>();
        for (const o of ops) {
          if ('set' in o) {
            m.set(o.set, o.value);
            ref.set(o.set, o.value);
          } else expect(m.delete(o.del)).toBe(ref.delete(o.del));
          expect(m.size).toBe(ref.size);
        }
        for (const [k, v] of ref) expect(m.get(k)).toBe(v);
        expect(m.values().sort((a, b) => a - b)).toEqual([...ref.values()].sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });
});
