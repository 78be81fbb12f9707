import { describe, expect, it } from 'vitest';
import { EventLog } from '../../../src/sim/engine/events.js';
import { KvCache } from '../../../src/sim/engine/kv-cache.js';

describe('KvCache', () => {
  it('hands out never-cached blocks before evicting cached ones', () => {
    const cache = new KvCache(3);
    const events = new EventLog();
    const a = cache.allocate(events);
    cache.registerHash(a, 11n);
    cache.release(a);
    const b = cache.allocate(events);
    const c = cache.allocate(events);
    expect(new Set([a, b, c]).size).toBe(3);
    expect(events.take()).toEqual([]);
    expect(cache.cachedBlocks).toBe(1);
    // Only the cached block is left: taking it evicts it.
    expect(cache.allocate(events)).toBe(a);
    expect(cache.cachedBlocks).toBe(0);
    expect(cache.allocate(events)).toBe(-1);
    cache.release(b);
    expect(cache.allocate(events)).toBe(b);
    expect(events.take()).toEqual([{ type: 'BlockRemoved', blockHashes: BigUint64Array.of(11n), medium: 'GPU' }]);
  });

  it('evicts unreferenced cached blocks least recently released first, merging consecutive removals', () => {
    const cache = new KvCache(4);
    const events = new EventLog();
    const blocks = [0, 1, 2, 3].map(() => cache.allocate(events));
    blocks.forEach((b, i) => cache.registerHash(b, BigInt(100 + i)));
    // Release order 2, 0, 3, 1: eviction must follow it.
    for (const i of [2, 0, 3, 1]) cache.release(blocks[i]);
    expect(cache.availableBlocks).toBe(4);
    expect(cache.usedBlocks).toBe(0);
    cache.allocate(events);
    cache.allocate(events);
    expect(events.take()).toEqual([{ type: 'BlockRemoved', blockHashes: BigUint64Array.of(102n, 100n), medium: 'GPU' }]);
    expect(cache.find(102n)).toBe(-1);
    expect(cache.find(103n)).toBe(blocks[3]);
    expect(cache.lookup(0, 103)).toBe(blocks[3]);
    expect(cache.evictions).toBe(2);
  });

  it('a prefix hit takes a cached block out of the eviction order until it is released again', () => {
    const cache = new KvCache(2);
    const events = new EventLog();
    const [x, y] = [cache.allocate(events), cache.allocate(events)];
    cache.registerHash(x, 1n);
    cache.registerHash(y, 2n);
    cache.release(x);
    cache.release(y);
    cache.acquire(x); // reused by a new request
    expect(cache.availableBlocks).toBe(1);
    expect(cache.usedBlocks).toBe(1);
    expect(cache.allocate(events)).toBe(y);
    expect(cache.allocate(events)).toBe(-1);
    cache.release(x); // now x is the least recently used (and only) cached free block
    cache.acquire(x);
    cache.acquire(x);
    cache.release(x);
    expect(cache.refCount(x)).toBe(1);
    expect(cache.availableBlocks).toBe(0);
  });

  it('clear() forgets every hash; referenced blocks stay referenced', () => {
    const cache = new KvCache(3);
    const events = new EventLog();
    const [a, b] = [cache.allocate(events), cache.allocate(events)];
    cache.registerHash(a, 5n);
    cache.registerHash(b, 6n);
    cache.release(a);
    cache.clear();
    expect([...cache.cachedHashes()]).toEqual([]);
    expect(cache.isRegistered(b)).toBe(false);
    expect(cache.usedBlocks).toBe(1);
    expect(cache.availableBlocks).toBe(2);
    cache.release(b);
    expect(cache.availableBlocks).toBe(3);
    // Nothing cached any more: allocation evicts nothing.
    for (let i = 0; i < 3; i++) cache.allocate(events);
    expect(events.take()).toEqual([]);
  });

  it('refuses inconsistent bookkeeping instead of corrupting it', () => {
    const cache = new KvCache(2);
    const events = new EventLog();
    const a = cache.allocate(events);
    const b = cache.allocate(events);
    cache.registerHash(a, 9n);
    expect(() => cache.registerHash(b, 9n)).toThrow(/cannot be registered/);
    expect(() => cache.registerHash(a, 10n)).toThrow(/cannot be registered/);
    cache.release(b);
    expect(() => cache.registerHash(b, 10n)).toThrow(/cannot be registered/);
    expect(() => cache.release(b)).toThrow(/released more often/);
    expect(cache.refCount(b)).toBe(0);
    expect(cache.availableBlocks).toBe(1);
  });

  it('registerUnlessCached hands back the block already cached under a hash, or registers the new one', () => {
    const cache = new KvCache(3);
    const events = new EventLog();
    const [a, b] = [cache.allocate(events), cache.allocate(events)];
    expect(cache.registerUnlessCached(a, 1, 2)).toBe(-1);
    expect(cache.registerUnlessCached(b, 1, 2)).toBe(a);
    expect(cache.isRegistered(b)).toBe(false);
    expect(cache.registerUnlessCached(a, 1, 2)).toBe(a); // its own hash
    expect(() => cache.registerUnlessCached(a, 1, 3)).toThrow(/registered already/);
    cache.release(b);
    expect(() => cache.registerUnlessCached(b, 1, 4)).toThrow(/not referenced/);
    expect([...cache.cachedHashes()]).toEqual([(1n << 32n) | 2n]);
  });

  it('registers hashes whose halves have the top bit set (signed and unsigned halves alike)', () => {
    const cache = new KvCache(2);
    const events = new EventLog();
    const a = cache.allocate(events);
    const hash = 0xffff_fffe_8000_0001n;
    cache.registerHash(a, hash);
    expect(cache.lookup(0xffff_fffe, 0x8000_0001)).toBe(a);
    expect(cache.lookup(-2, -0x7fff_ffff)).toBe(a);
    expect([...cache.cachedHashes()]).toEqual([hash]);
    cache.release(a);
    cache.allocate(events);
    cache.allocate(events); // evicts a
    expect(events.take()).toEqual([{ type: 'BlockRemoved', blockHashes: BigUint64Array.of(hash), medium: 'GPU' }]);
  });
});
