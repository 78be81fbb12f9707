import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { engineHashBlocks } from '../../../src/core/engine-hash.js';
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

  it('hashes runs of blocks in the addon bit for bit as the chain of hashBlock calls', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 33 }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 5 }),
        fc.tuple(fc.integer(), fc.integer(), fc.integer()),
        fc.array(fc.integer({ min: 0, max: 0xffff_ffff }), { minLength: 1, maxLength: 64 }),
        (blockSize, count, from, [parentHi, parentLo, lora], pattern) => {
          const tokens = Uint32Array.from({ length: from + count * blockSize }, (_, i) => pattern[i % pattern.length] ^ i);
          const out = new BigUint64Array(count + 2);
          engineHashBlocks(tokens, from, blockSize, count, parentHi, parentLo, lora, out, 1);
          const expected = [0n];
          const halves = new Uint32Array(2);
          let [hi, lo] = [parentHi, parentLo];
          for (let b = 0; b < count; b++) {
            hashBlock(tokens, from + b * blockSize, blockSize, hi, lo, lora, halves);
            [hi, lo] = [halves[0], halves[1]];
            expected.push(toU64(hi, lo));
          }
          expected.push(0n);
          expect([...out]).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses runs past the tokens or the output, and blocks of no tokens, with a RangeError', () => {
    const tokens = new Uint32Array(32);
    const out = new BigUint64Array(4);
    expect(() => engineHashBlocks(tokens, 1, 16, 2, 0, 0, 0, out, 0)).toThrow(RangeError);
    expect(() => engineHashBlocks(tokens, 0, 8, 4, 0, 0, 0, out, 1)).toThrow(RangeError);
    expect(() => engineHashBlocks(tokens, 0, 0, 1, 0, 0, 0, out, 0)).toThrow(RangeError);
    expect([...out]).toEqual([0n, 0n, 0n, 0n]);
  });
});
