import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockHashIndex } from '../../../src/sim/engine/hash-index.js';

/**
 * An index over records of its own that keeps each value's high half as its owners do (written
 * before the add, left until the delete): a value's record holds the hi of the key last added under it.
 */
function index(capacity: number) {
  const records = new Int32Array(capacity * 3);
  const ix = new BlockHashIndex(capacity, { records, stride: 3, offset: 1 });
  const own = (hi: number, value: number) => {
    // Only a value stored under no key may take a new high half (a stored one's record is in use).
    if (Number.isInteger(value) && value >= 0 && value < capacity && !stored.has(value)) records[value * 3 + 1] = hi;
  };
  const stored = new Set<number>();
  return {
    ix,
    records,
    add(hi: number, lo: number, value: number) {
      own(hi, value);
      ix.add(hi, lo, value);
      stored.add(value);
    },
    addIfAbsent(hi: number, lo: number, value: number) {
      own(hi, value);
      const r = ix.addIfAbsent(hi, lo, value);
      if (r === -1) stored.add(value);
      return r;
    },
    delete(hi: number, lo: number) {
      const v = ix.get(hi, lo);
      const r = ix.delete(hi, lo);
      if (r) stored.delete(v);
      return r;
    },
    get: (hi: number, lo: number) => ix.get(hi, lo),
    get size() {
      return ix.size;
    },
    clear() {
      ix.clear();
      stored.clear();
    },
  };
}

describe('BlockHashIndex', () => {
  it('stores, finds and deletes by both halves of a hash', () => {
    const ix = index(16);
    ix.add(1, 0xffff_ffff, 7);
    ix.add(2, 0xffff_ffff, 8); // same low half: same home slot
    expect(ix.get(1, 0xffff_ffff)).toBe(7);
    expect(ix.get(2, 0xffff_ffff)).toBe(8);
    expect(ix.get(3, 0xffff_ffff)).toBe(-1);
    expect(ix.delete(1, 0xffff_ffff)).toBe(true);
    expect(ix.delete(1, 0xffff_ffff)).toBe(false);
    expect(ix.get(2, 0xffff_ffff)).toBe(8); // shifted back into the hole, still found
    expect(ix.size).toBe(1);
    ix.clear();
    expect(ix.get(2, 0xffff_ffff)).toBe(-1);
    expect(ix.size).toBe(0);
  });

  it('refuses a value outside [0, capacity) and an entry past its capacity, changing nothing', () => {
    const ix = index(2);
    expect(() => ix.add(0, 1, 2)).toThrow(RangeError);
    expect(() => ix.add(0, 1, -1)).toThrow(RangeError);
    expect(() => ix.add(0, 1, 0.5)).toThrow(RangeError);
    ix.add(0, 1, 0);
    ix.add(0, 2, 1);
    expect(() => ix.add(0, 3, 1)).toThrow(/holds 2 entries/);
    expect(() => ix.add(0, 2, 0)).toThrow(/in the index already/);
    expect([ix.get(0, 1), ix.get(0, 2), ix.get(0, 3), ix.size]).toEqual([0, 1, -1, 2]);
  });

  it("reads a key's high half from its value's record, and refuses an add whose record does not hold it", () => {
    const records = new Int32Array(8);
    const ix = new BlockHashIndex(4, { records, stride: 2, offset: 0 });
    records[2 * 3] = 5;
    ix.add(5, 9, 3);
    expect([ix.get(5, 9), ix.get(6, 9)]).toEqual([3, -1]);
    expect(() => ix.add(7, 10, 2)).toThrow(/record of value 2 does not hold/);
    expect([ix.get(7, 10), ix.size]).toEqual([-1, 1]);
    expect(() => new BlockHashIndex(4, { records, stride: 3, offset: 0 })).toThrow(RangeError);
    expect(() => new BlockHashIndex(4, { records, stride: 2, offset: 2 })).toThrow(RangeError);
  });

  it('tells apart keys with the same low half by their high half', () => {
    const ix = index(8);
    for (let v = 0; v < 8; v++) ix.add(v * 1000 - 3000, 42, v);
    for (let v = 0; v < 8; v++) expect(ix.get(v * 1000 - 3000, 42)).toBe(v);
    expect(ix.get(123, 42)).toBe(-1);
    expect(ix.delete(0, 42)).toBe(true);
    expect([ix.get(0, 42), ix.get(-3000, 42), ix.get(4000, 42), ix.size]).toEqual([-1, 0, 7, 7]);
  });

  it('addIfAbsent returns the value already stored under a key and changes nothing, or stores its own', () => {
    const ix = index(4);
    expect(ix.addIfAbsent(5, 9, 3)).toBe(-1);
    expect(ix.addIfAbsent(5, 9, 1)).toBe(3);
    expect(ix.addIfAbsent(6, 9, 1)).toBe(-1); // same low half, other key
    expect([ix.get(5, 9), ix.get(6, 9), ix.size]).toEqual([3, 1, 2]);
  });

  it('agrees with a Map under any mix of adds and deletes, with clustered keys wrapping at the end of the table', () => {
    // Low halves from a small set cluster entries in a few home slots (wrapping at the table's end).
    const key = fc.tuple(fc.integer({ min: 0, max: 7 }), fc.constantFrom(0, 1, 1023, 1024, 2047, 0xffff_ffff, 0x8000_0000));
    const op = fc.oneof(fc.tuple(fc.constant('add' as const), key), fc.tuple(fc.constant('delete' as const), key));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 0, max: 1500 }), (ops, bulk) => {
        const ix = index(bulk + ops.length);
        const ref = new Map<string, number>();
        // Distinct keys filling the table up to half, interleaved with the clustered ones.
        for (let i = 0; i < bulk; i++) {
          ix.add(i * 7919, i * 104729, i);
          ref.set(`${i * 7919}:${i * 104729}`, i);
        }
        let v = bulk;
        for (const [kind, [hi, lo]] of ops) {
          const k = `${hi}:${lo}`;
          if (kind === 'add') {
            // Present: the stored value comes back and nothing changes.
            expect(ix.addIfAbsent(hi, lo, v)).toBe(ref.get(k) ?? -1);
            if (!ref.has(k)) ref.set(k, v++);
          } else {
            expect(ix.delete(hi, lo)).toBe(ref.delete(k));
          }
        }
        expect(ix.size).toBe(ref.size);
        const wrong: string[] = [];
        for (const [k, val] of ref) {
          const [hi, lo] = k.split(':').map(Number);
          if (ix.get(hi, lo) !== val) wrong.push(k);
        }
        for (let hi = 0; hi < 8; hi++)
          for (const lo of [0, 1, 1023, 1024, 2047, 0xffff_ffff, 0x8000_0000]) if (ix.get(hi, lo) !== (ref.get(`${hi}:${lo}`) ?? -1)) wrong.push(`${hi}:${lo}`);
        expect(wrong).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});
