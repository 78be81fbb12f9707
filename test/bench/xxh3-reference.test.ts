// The benchmark's plain-TypeScript XXH3 must compute exactly what the addon computes, or its
// throughput figures would compare different work.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockHashesReference, sequenceHashesReference, xxh3_64 } from '../../bench/reference/xxh3.js';
import { native } from '../../src/core/binding.js';
import { computeBlockHashes, computeSequenceHashes } from '../../src/core/hashing.js';

// data[i] = (i * 131 + 7) & 0xff; expected values from Python's xxhash 4.1.0:
//   xxhash.xxh3_64_intdigest(data[:n], seed)
const data = Uint8Array.from({ length: 3000 }, (_, i) => (i * 131 + 7) & 0xff);
const lengths = [0, 1, 2, 3, 5, 7, 9, 13, 17, 33, 65, 97, 127, 129, 200, 241, 1023, 1025, 2049, 2999];
const python: Record<string, bigint[]> = {
  '0': [
    3244421341483603138n,
    5502495245947142431n,
    3010103725172346478n,
    7943829059066201772n,
    5329424330036611939n,
    5090693914820600895n,
    8944394699905593055n,
    4701031833325471267n,
    13081819869213806705n,
    11880189719134216051n,
    10936639315039379145n,
    17385482648986237405n,
    17099312506880527797n,
    1605741916052902306n,
    13905920432424470566n,
    10767172507156293534n,
    12200247895068469476n,
    7405123385822357415n,
    6349179943806269125n,
    6180554042209803683n,
  ],
  '1337': [
    15128690059815094969n,
    14639076865055480946n,
    17090254997594766590n,
    18183316510243443708n,
    9429628570830295040n,
    18073821856343865852n,
    2979084575525963760n,
    16494626973987266183n,
    4893064066794794821n,
    2189708087033791350n,
    16751779421337521099n,
    10435143827896406421n,
    17659231986484419463n,
    5380786426666262259n,
    15310135317108637515n,
    14054063772819837973n,
    12094147874273929628n,
    12050175856931640997n,
    529175373161662580n,
    3301186400478664895n,
  ],
  '18364758544493064720': [
    16338393937559630042n,
    13943423845724394519n,
    248450514900403781n,
    18106214105854285274n,
    11131037259250079738n,
    12504722880218224383n,
    3195370916910650483n,
    4426544018126494472n,
    12211263861796621103n,
    15307793745418528288n,
    11200466020049754346n,
    6055234995430372396n,
    12959010193640122171n,
    15998743905722157957n,
    8207556780662775197n,
    10706981133393310531n,
    18359938657516188398n,
    18175962458050163597n,
    6737021364085158598n,
    6871770138889123325n,
  ],
};

describe('reference XXH3-64', () => {
  it('matches Python xxhash on every size class, with and without seeds', () => {
    for (const [seed, expected] of Object.entries(python)) {
      const got = lengths.map((n) => xxh3_64(data.subarray(0, n), BigInt(seed)));
      expect(got, `seed ${seed}`).toEqual(expected);
    }
  });

  it('matches the addon on random byte strings (unseeded: multimodal id hashes)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-_./'), maxLength: 2600, size: 'max' }), (id) => {
        fc.pre(!(id.length === 64 && /^[0-9a-f]+$/.test(id))); // 64-hex digests are parsed, not hashed
        expect(xxh3_64(new TextEncoder().encode(id))).toBe(native.mmIdentifierHash(id));
      }),
      { numRuns: 300 },
    );
  });

  it('matches the addon’s block hashes for random tokens, block sizes and u64 seeds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 700 }),
        fc.integer({ min: 0, max: 3 }),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (blockSize, blocks, seed, salt) => {
          const tokens = Uint32Array.from({ length: blockSize * blocks + (salt % blockSize) }, (_, i) => Math.imul(i + salt, 2654435761) >>> 0);
          const out = new BigUint64Array(blocks);
          native.computeBlockHashesInto(tokens, blockSize, seed, null, null, out);
          expect(blockHashesReference(tokens, blockSize, seed)).toEqual(out);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('matches computeBlockHashes and computeSequenceHashes on a long prompt', () => {
    const tokens = Uint32Array.from({ length: 8192 + 5 }, (_, i) => (i * 7919) % 152_000);
    for (const blockSize of [16, 64]) {
      const local = blockHashesReference(tokens, blockSize);
      expect(local).toEqual(computeBlockHashes(tokens, blockSize));
      expect(sequenceHashesReference(local)).toEqual(computeSequenceHashes(local));
    }
    // Reads the tokens in place from a view at an offset, as the addon does.
    const view = tokens.subarray(3, 3 + 64);
    expect(blockHashesReference(view, 16)).toEqual(computeBlockHashes(view, 16));
  });

  it('refuses seeds that are not u64 bigints', () => {
    expect(() => xxh3_64(new Uint8Array(4), -1n)).toThrow(RangeError);
    expect(() => blockHashesReference(new Uint32Array(4), 4, 1n << 64n)).toThrow(RangeError);
  });
});
