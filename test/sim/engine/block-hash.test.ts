import { describe, expect, it } from 'vitest';
import { computeBlockHashes, computeSequenceHashes } from '../../../src/core/hashing.js';
import { ROOT_HI, ROOT_LO, hashBlock, loraSeed, toU64 } from '../../../src/sim/engine/block-hash.js';

function hash(tokens: number[], parent: [number, number] = [ROOT_HI, ROOT_LO], lora: string | null = null): bigint {
  const out = new Uint32Array(2);
  hashBlock(Uint32Array.from(tokens), 0, tokens.length, parent[0], parent[1], loraSeed(lora), out);
  return toU64(out[0], out[1]);
}

describe('engine block hash', () => {
  it('depends on the tokens, their order, the parent and the LoRA', () => {
    const base = hash([1, 2, 3, 4]);
    expect(hash([1, 2, 3, 4])).toBe(base);
    expect(hash([1, 2, 4, 3])).not.toBe(base);
    expect(hash([1, 2, 3, 5])).not.toBe(base);
    expect(hash([1, 2, 3, 4], [0, 1])).not.toBe(base);
    expect(hash([1, 2, 3, 4], [1, 0])).not.toBe(base);
    expect(hash([1, 2, 3, 4], undefined, 'adapter')).not.toBe(base);
    expect(hash([1, 2, 3, 4], undefined, 'adapter')).not.toBe(hash([1, 2, 3, 4], undefined, 'other'));
  });

  it('hashes a block inside a longer buffer like the block alone', () => {
    const out = new Uint32Array(2);
    hashBlock(Uint32Array.from([9, 9, 1, 2, 3, 4, 9]), 2, 4, ROOT_HI, ROOT_LO, 0, out);
    expect(toU64(out[0], out[1])).toBe(hash([1, 2, 3, 4]));
  });

  it("is not the router's hash (the router must map engine hashes to its own)", () => {
    const tokens = Uint32Array.from([1, 2, 3, 4]);
    const local = computeBlockHashes(tokens, 4);
    expect(local[0]).toBe(14643705804678351452n);
    expect(hash([1, 2, 3, 4])).not.toBe(local[0]);
    expect(hash([1, 2, 3, 4])).not.toBe(computeSequenceHashes(local)[0]);
  });

  it('spreads over all 64 bits without collisions on a small sample', () => {
    const seen = new Set<bigint>();
    let highBits = 0n;
    for (let i = 0; i < 20000; i++) {
      const h = hash([i, i >> 3, 7, 1]);
      seen.add(h);
      highBits |= h >> 56n;
    }
    expect(seen.size).toBe(20000);
    expect(highBits).toBe(0xffn);
  });
});
