import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockHashIndex } from '../../../src/sim/engine/hash-index.js';

describe('BlockHashIndex', () => {
  it('stores, finds and deletes by both halves of a hash', () => {
    const ix = new BlockHashIndex(16);
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
    const ix = new BlockHashIndex(2);
    expect(() => ix.add(0, 1, 2)).toThrow(RangeError);
    expect(() => ix.add(0, 1, -1)).toThrow(RangeError);
    expect(() => ix.add(0, 1, 0.5)).toThrow(RangeError);
    ix.add(0, 1, 0);
    ix.add(0, 2, 1);
    expect(() => ix.add(0, 3, 1)).toThrow(/holds 2 entries/);
    expect(() => ix.add(0, 2, 0)).toThrow(/in the index already/);
    expect([ix.get(0, 1), ix.get(0, 2), ix.get(0, 3), ix.size]).toEqual([0, 1, -1, 2]);
  });

  it('refuses a value stored under another key, changing nothing; a deleted key frees its value', () => {
    const ix = new BlockHashIndex(4);
    ix.add(5, 9, 3);
    expect(() => ix.add(6, 10, 3)).toThrow(/value 3 is stored under another key/);
    expect([ix.get(5, 9), ix.get(6, 10), ix.size]).toEqual([3, -1, 1]);
    expect(ix.delete(5, 9)).toBe(true);
    ix.add(6, 10, 3);
    expect([ix.get(5, 9), ix.get(6, 10), ix.size]).toEqual([-1, 3, 1]);
  });

  it('tells apart keys with the same low half by their high half', () => {
    const ix = new BlockHashIndex(8);
    for (let v = 0; v < 8; v++) ix.add(v * 1000 - 3000, 42, v);
    for (let v = 0; v < 8; v++) expect(ix.get(v * 1000 - 3000, 42)).toBe(v);
    expect(ix.get(123, 42)).toBe(-1);
    expect(ix.delete(0, 42)).toBe(true);
    expect([ix.get(0, 42), ix.get(-3000, 42), ix.get(4000, 42), ix.size]).toEqual([-1, 0, 7, 7]);
  });

  it('addIfAbsent returns the value already stored under a key and changes nothing, or stores its own', () => {
    const ix = new BlockHashIndex(4);
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
        const ix = new BlockHashIndex(bulk + ops.length);
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
        for (let hi = 0; hi < 8; hi++) for (const lo of [0, 1, 1023, 1024, 2047, 0xffff_ffff, 0x8000_0000]) if (ix.get(hi, lo) !== (ref.get(`${hi}:${lo}`) ?? -1)) wrong.push(`${hi}:${lo}`);
        expect(wrong).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});
