import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CacheStat, EngineBlockCache } from '../../src/core/engine-cache.js';

const counters = (c: EngineBlockCache) => [...c.stats];

describe('EngineBlockCache', () => {
  it('runs of blocks: allocation (evictions a suffix, their hashes out), commit with deduplication, match, release last first', () => {
    const c = new EngineBlockCache(6);
    const a = new Int32Array(3);
    expect(c.allocate(3, a, 0)).toBe(0);
    expect([...a]).toEqual([0, 1, 2]);
    const hashes = BigUint64Array.of(11n, 12n, 2n ** 64n - 1n);
    const fresh = new Uint8Array(3);
    expect(c.commit(a, hashes, 0, 3, fresh)).toBe(3);
    expect([...fresh]).toEqual([1, 1, 1]);
    // A second table whose first two blocks fill with the same content: swapped for the cached copies.
    const b = new Int32Array(2);
    c.allocate(2, b, 0);
    expect(c.commit(b, hashes, 0, 2, fresh)).toBe(0);
    expect([...b]).toEqual([0, 1]);
    expect(c.refCount(0)).toBe(2);
    const out = new Int32Array(4);
    expect(c.match(BigUint64Array.of(11n, 12n, 99n, 2n ** 64n - 1n), 4, out)).toBe(2);
    expect(c.stats[CacheStat.lastEvictable]).toBe(0);
    c.release(b, 0, 2);
    c.release(a, 0, 3); // block 2 first, then 1, then 0: the LRU's order
    expect(c.stats[CacheStat.used]).toBe(0);
    expect(c.stats[CacheStat.cached]).toBe(3);
    expect(c.match(hashes, 3, out)).toBe(3);
    expect(c.stats[CacheStat.lastEvictable]).toBe(3);
    // Three never-cached blocks first (3, 4 and the swapped-out ones), then evictions in LRU order.
    const grown = new Int32Array(8);
    const removed = new BigUint64Array(6);
    expect(c.allocate(6, grown, 2, removed)).toBe(3);
    expect([...removed.subarray(0, 3)]).toEqual([2n ** 64n - 1n, 12n, 11n]);
    expect(c.stats[CacheStat.evictions]).toBe(3);
    expect(c.lookup(0, 11)).toBe(-1);
  });

  it('refuses bad arguments with TypeError / RangeError and changes nothing', () => {
    expect(() => new EngineBlockCache(0)).toThrow(RangeError);
    expect(() => new EngineBlockCache(1.5)).toThrow(RangeError);
    const c = new EngineBlockCache(4);
    const t = new Int32Array(4);
    c.allocate(2, t, 0);
    const before = counters(c);
    expect(() => c.allocate(3, t, 0)).toThrow(RangeError); // 2 available
    expect(() => c.allocate(2, t, 3)).toThrow(RangeError); // past the table
    expect(() => c.allocate(1, new Uint32Array(4) as unknown as Int32Array, 0)).toThrow(TypeError);
    expect(() => c.acquire(Int32Array.of(4), 0, 1)).toThrow(RangeError); // no block 4
    expect(() => c.release(t, 2, 1)).toThrow(RangeError);
    expect(() => c.match(new BigUint64Array(1), 2, new Int32Array(2))).toThrow(RangeError);
    expect(() => c.commit(t, new BigUint64Array(1), 0, 2, new Uint8Array(2))).toThrow(RangeError);
    expect(() => c.refCount(-1)).toThrow(RangeError);
    expect(counters(c)).toEqual(before);
    c.release(t, 0, 2);
    expect(() => c.release(t, 0, 1)).toThrow(/released more often than acquired/);
    expect(() => c.registerUnlessCached(0, 0, 5)).toThrow(/not referenced/);
    expect(c.stats[CacheStat.used]).toBe(0);
    expect(c.stats[CacheStat.available]).toBe(4);
  });

  it('agrees with a plain model under random allocations, commits, acquisitions and releases', () => {
    // The model: reference counts, hash -> block, LRU order of cached free blocks, free stack.
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(3), fc.nat(7), fc.integer({ min: 1, max: 4 })), { maxLength: 60 }), (ops) => {
        const total = 12;
        const c = new EngineBlockCache(total);
        const refs = new Array<number>(total).fill(0);
        const hashOf = new Map<number, bigint>();
        const byHash = new Map<bigint, number>();
        const lru: number[] = [];
        const free = Array.from({ length: total }, (_, i) => total - 1 - i);
        const tables: number[][] = [];
        const release = (b: number) => {
          if (--refs[b] > 0) return;
          if (hashOf.has(b)) lru.push(b);
          else free.push(b);
        };
        for (const [op, x, n] of ops) {
          if (op === 0 && n <= free.length + lru.length) {
            const out = new Int32Array(n);
            const removed = new BigUint64Array(n);
            const evicted = c.allocate(n, out, 0, removed);
            const want: number[] = [];
            const gone: bigint[] = [];
            for (let i = 0; i < n; i++) {
              let b = free.pop();
              if (b === undefined) {
                b = lru.shift()!;
                gone.push(hashOf.get(b)!);
                byHash.delete(hashOf.get(b)!);
                hashOf.delete(b);
              }
              refs[b] = 1;
              want.push(b);
            }
            expect([...out]).toEqual(want);
            expect([...removed.subarray(0, evicted)]).toEqual(gone);
            tables.push(want);
          } else if (op === 1 && tables.length > 0) {
            // Commit a table's blocks under hashes drawn from a small set (duplicates likely).
            const table = tables[x % tables.length];
            const arr = Int32Array.from(table);
            const hashes = BigUint64Array.from(table.map((_, i) => BigInt((x + i) % 5)));
            const unregistered = table.every((b) => !hashOf.has(b));
            if (!unregistered) continue;
            c.commit(arr, hashes, 0, table.length, new Uint8Array(table.length));
            table.forEach((b, i) => {
              const h = hashes[i];
              const cached = byHash.get(h);
              if (cached === undefined) {
                byHash.set(h, b);
                hashOf.set(b, h);
              } else if (cached !== b) {
                if (refs[cached]++ === 0) lru.splice(lru.indexOf(cached), 1);
                release(b);
                table[i] = cached;
              }
            });
            expect([...arr]).toEqual(table);
          } else if (op === 2 && tables.length > 0) {
            const table = tables.splice(x % tables.length, 1)[0];
            c.release(Int32Array.from(table), 0, table.length);
            for (let i = table.length - 1; i >= 0; i--) release(table[i]);
          }
          expect(c.stats[CacheStat.used]).toBe(refs.filter((r) => r > 0).length);
          expect(c.stats[CacheStat.available]).toBe(free.length + lru.length);
          expect(c.stats[CacheStat.cached]).toBe(byHash.size);
        }
        expect(new Set(c.cachedHashes())).toEqual(new Set(byHash.keys()));
      }),
      { numRuns: 200 },
    );
  });
});
