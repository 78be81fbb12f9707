import { describe, expect, it } from 'vitest';
import { SharedScratch } from '../../src/hash-pool/shared-scratch.js';

describe('SharedScratch', () => {
  it('hands out shared buffers of at least the asked size, in powers of two from 1 MiB', () => {
    const s = new SharedScratch(4, 64 << 20);
    const a = s.acquire(10);
    expect(a).toBeInstanceOf(SharedArrayBuffer);
    expect(a.byteLength).toBe(1 << 20);
    expect(s.acquire((3 << 20) + 1).byteLength).toBe(4 << 20);
  });

  it('reuses released buffers, smallest fitting first, never one in use', () => {
    const s = new SharedScratch(4, 64 << 20);
    const small = s.acquire(1);
    const big = s.acquire(8 << 20);
    s.release(big);
    s.release(small);
    expect(s.keptBytes).toBe(9 << 20);
    expect(s.acquire(100)).toBe(small);
    expect(s.keptBytes).toBe(8 << 20);
    expect(s.acquire(100)).toBe(big); // small is in use: the only free one is handed out
    expect(s.keptBytes).toBe(0);
    const fresh = s.acquire(100);
    expect(fresh).not.toBe(small);
    expect(fresh).not.toBe(big);
  });

  it('keeps at most maxKept buffers (dropping the smallest) and none above maxKeptBytes', () => {
    const s = new SharedScratch(2, 4 << 20);
    const bufs = [s.acquire(1), s.acquire(2 << 20), s.acquire(4 << 20), s.acquire(16 << 20)];
    for (const b of bufs) s.release(b);
    expect(s.keptBytes).toBe((2 << 20) + (4 << 20));
    s.clear();
    expect(s.keptBytes).toBe(0);
  });
});
