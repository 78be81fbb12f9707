import { describe, expect, it } from 'vitest';
import { TokenSampler, hashString32, mix32, seed32 } from '../../../src/sim/engine/rng.js';

describe('TokenSampler', () => {
  it('draws printable ASCII token ids, the same for the same (seed, id, index)', () => {
    const a = new TokenSampler(7);
    const b = new TokenSampler(7);
    const key = a.streamKey('req-1');
    const ids = Array.from({ length: 2000 }, (_, i) => a.tokenId(key, i));
    expect(ids.every((t) => t >= 32 && t <= 126)).toBe(true);
    expect(new Set(ids).size).toBe(95); // every printable byte shows up
    expect(Array.from({ length: 2000 }, (_, i) => b.tokenId(b.streamKey('req-1'), i))).toEqual(ids);
  });

  it('differs across seeds and request ids', () => {
    const s = new TokenSampler(7);
    const t = new TokenSampler(8);
    const seq = (x: TokenSampler, id: string) => Array.from({ length: 32 }, (_, i) => x.tokenId(x.streamKey(id), i)).join(',');
    expect(seq(s, 'a')).not.toBe(seq(t, 'a'));
    expect(seq(s, 'a')).not.toBe(seq(s, 'b'));
  });

  it('end-of-sequence draws are uniform in [0, 1)', () => {
    const s = new TokenSampler(1);
    const key = s.streamKey('x');
    const draws = Array.from({ length: 20000 }, (_, i) => s.eosDraw(key, i));
    expect(draws.every((d) => d >= 0 && d < 1)).toBe(true);
    const below = draws.filter((d) => d < 0.25).length / draws.length;
    expect(below).toBeGreaterThan(0.23);
    expect(below).toBeLessThan(0.27);
  });

  it('seeds fold every safe integer, including ones above 2^32', () => {
    expect(seed32(2 ** 40)).not.toBe(seed32(0));
    expect(seed32(-1)).not.toBe(seed32(1));
    expect(mix32(0)).toBe(0);
    expect(hashString32('a', 0)).not.toBe(hashString32('b', 0));
  });
});
