import { describe, expect, it } from 'vitest';
import { hitRateBound, pooledLruHitRate } from '../../../src/sim/replay/bound.js';

// Trace blocks of 4 tokens, engine blocks of 2: each hash id stands for two engine blocks.
const mk = (inputLength: number, hashIds: number[]) => ({ timestamp: 0, inputLength, outputLength: 1, hashIds });
const lru = (trace: ReturnType<typeof mk>[], capacity: number) => pooledLruHitRate(trace, capacity, 2, 4);

describe('pooledLruHitRate', () => {
  it('hits the leading cached blocks, never the last token', () => {
    const a = mk(8, [1, 2]);
    // Second request: all 4 blocks cached, 7 of its 8 tokens counted.
    expect(lru([a, a], 100)).toBeCloseTo(7 / 16);
    // A different second block: the first trace block's two engine blocks hit.
    expect(lru([a, mk(8, [1, 3])], 100)).toBeCloseTo(4 / 16);
    // A partial last block is not cached (engines cache complete blocks only).
    expect(lru([mk(7, [1, 2]), mk(8, [1, 2])], 100)).toBeCloseTo(6 / 15);
  });

  it("evicts the least recently used blocks, a prompt's tail before its head", () => {
    const a = mk(8, [1, 2]);
    // Capacity 2: after the first request only its first two blocks remain.
    expect(lru([a, a], 2)).toBeCloseTo(4 / 16);
    // A request in between pushes them out; capacity 0 holds nothing.
    expect(lru([a, mk(8, [5, 6]), a], 4)).toBeCloseTo(0);
    expect(lru([a, a], 0)).toBe(0);
  });

  it('never beats the infinite-cache bound and reaches it with room for every block', () => {
    const trace = [mk(8, [1, 2]), mk(8, [1, 2]), mk(12, [1, 2, 3]), mk(8, [4, 2]), mk(12, [1, 2, 3])];
    const infinite = lru(trace, 1e6);
    for (const capacity of [0, 2, 4, 8]) expect(lru(trace, capacity)).toBeLessThanOrEqual(infinite);
    expect(infinite).toBeLessThanOrEqual(hitRateBound(trace, 'tokens'));
  });

  it('refuses a block size that does not divide the trace block, and a bad capacity', () => {
    expect(() => pooledLruHitRate([mk(8, [1, 2])], 4, 3, 4)).toThrow(/must divide the trace's block of 4 tokens, got 3/);
    expect(() => pooledLruHitRate([mk(8, [1, 2])], 4, 0, 4)).toThrow(/blockSize must be an integer in \[1, /);
    expect(() => pooledLruHitRate([mk(8, [1, 2])], 4, 2.5, 4)).toThrow(RangeError);
    expect(() => pooledLruHitRate([mk(8, [1, 2])], 4, '2' as never, 4)).toThrow(TypeError);
    expect(() => pooledLruHitRate([mk(8, [1, 2])], -1, 2, 4)).toThrow(/capacityBlocks must be an integer >= 0/);
  });
});
