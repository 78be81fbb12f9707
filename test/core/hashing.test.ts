import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { concat } from './batch-layout.js';
import {
  computeBlockHashes,
  computeBlockHashesAsync,
  computeBlockHashesBatch,
  computeBlockHashesBatchAsync,
  computeSequenceHashes,
  type HashOptions,
} from '../../src/core/hashing.js';

// Expected values computed independently with Python's xxhash (xxh3_64_intdigest), see the
// README's "Hash vectors" section for the script.
const range = (a: number, b: number) => Uint32Array.from({ length: b - a }, (_, i) => a + i);

describe('computeBlockHashes', () => {
  it('matches the protocol test vector', () => {
    expect(computeBlockHashes(Uint32Array.of(1, 2, 3, 4), 4)).toEqual(BigUint64Array.of(14643705804678351452n));
  });

  it('hashes each complete block and skips the partial tail', () => {
    const hashes = computeBlockHashes(range(0, 50), 16);
    expect(hashes).toEqual(BigUint64Array.of(15310707395893867146n, 15292316782987903195n, 5532946206955930018n));
    expect(computeBlockHashes(range(0, 15), 16)).toHaveLength(0);
  });

  it('seeds by LoRA name and cache namespace', () => {
    const t = Uint32Array.of(1, 2, 3, 4);
    expect(computeBlockHashes(t, 4, { loraName: 'my-lora' })[0]).toBe(15671544057904749233n);
    expect(computeBlockHashes(t, 4, { cacheNamespace: 'tenant-a' })[0]).toBe(5738685477468498325n);
    expect(computeBlockHashes(t, 4, { loraName: 'my-lora', cacheNamespace: 'tenant-a' })[0]).toBe(6157910915076630503n);
    expect(computeBlockHashes(t, 4, { loraName: '', cacheNamespace: '' })[0]).toBe(14643705804678351452n);
  });

  it('appends sorted multimodal hashes to their block', () => {
    const digest = `00000000000000ff${'ab'.repeat(24)}`;
    const t = Uint32Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    const hashes = computeBlockHashes(t, 4, { mmHashes: [['image-1', digest]] });
    expect(hashes[0]).toBe(14844992798462243241n);
    // Order of the items does not matter, and blocks without items hash as plain tokens.
    expect(computeBlockHashes(t, 4, { mmHashes: [[digest, 'image-1'], []] })[0]).toBe(14844992798462243241n);
    expect(hashes[1]).toBe(computeBlockHashes(t, 4)[1]);
    expect(computeBlockHashes(t, 4, { mmHashes: [[255n, 9764656481613128169n]] })[0]).toBe(14844992798462243241n);
  });

  it('refuses bad arguments with TypeError or RangeError', () => {
    expect(() => computeBlockHashes([1, 2, 3, 4] as unknown as Uint32Array, 4)).toThrow(TypeError);
    expect(() => computeBlockHashes(Int32Array.of(1) as unknown as Uint32Array, 4)).toThrow(/Uint32Array/);
    expect(() => computeBlockHashes(range(0, 8), 0)).toThrow(RangeError);
    expect(() => computeBlockHashes(range(0, 8), Number.NaN)).toThrow(RangeError);
    expect(() => computeBlockHashes(range(0, 8), 2.5)).toThrow(RangeError);
    expect(() => computeBlockHashes(range(0, 8), '4' as unknown as number)).toThrow(TypeError);
    expect(() => computeBlockHashes(range(0, 8), 4, { loraName: 7 as unknown as string })).toThrow(TypeError);
    expect(() => computeBlockHashes(range(0, 8), 4, { mmHashes: 'x' as never })).toThrow(TypeError);
    expect(() => computeBlockHashes(range(0, 8), 4, { mmHashes: [[-1n]] })).toThrow(RangeError);
  });
});

describe('computeSequenceHashes', () => {
  it('chains local hashes with seed 1337', () => {
    const local = computeBlockHashes(range(0, 48), 16);
    expect(computeSequenceHashes(local)).toEqual(BigUint64Array.of(15310707395893867146n, 13769157705258532664n, 11879827756109914528n));
  });

  it('handles the empty sequence and refuses non-BigUint64Array input', () => {
    expect(computeSequenceHashes(new BigUint64Array(0))).toHaveLength(0);
    expect(() => computeSequenceHashes([1n] as unknown as BigUint64Array)).toThrow(TypeError);
  });
});

describe('results from the shared slab', () => {
  it('stay independent and correct across many calls and slab rollovers', () => {
    const prompts = Array.from({ length: 300 }, (_, k) => Uint32Array.from({ length: 64 + (k % 7) * 16 }, (_, i) => k * 1000 + i));
    const results = prompts.map((p) => computeBlockHashes(p, 16));
    const sequences = results.map((r) => computeSequenceHashes(r));
    // Writing into one result must not touch any other.
    results[0].fill(0n);
    results.slice(1).forEach((r, k) => {
      expect(r).toEqual(computeBlockHashes(prompts[k + 1], 16));
      expect(sequences[k + 1]).toEqual(computeSequenceHashes(r));
    });
    // Large results get a buffer of their own.
    const big = computeBlockHashes(range(0, 64 * 1024), 16);
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(big.byteLength);
  });
});

/** What a call did: its result, or the class and message of what it threw or rejected with. */
async function outcome<T>(call: () => T | Promise<T>): Promise<{ value: T } | { error: string }> {
  try {
    return { value: await call() };
  } catch (err) {
    return { error: `${(err as Error).constructor.name}: ${(err as Error).message}` };
  }
}

const digest = `00000000000000ff${'ab'.repeat(24)}`;

describe('computeBlockHashesAsync', () => {
  it('matches the protocol test vector and returns a promise', async () => {
    const pending = computeBlockHashesAsync(Uint32Array.of(1, 2, 3, 4), 4);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual(BigUint64Array.of(14643705804678351452n));
  });

  it("gives the sync form's hashes for any prompt, block size and options", async () => {
    const optionsArb = fc.record(
      {
        loraName: fc.constantFrom('my-lora', ''),
        cacheNamespace: fc.constantFrom('tenant-a', ''),
        mmHashes: fc.array(fc.array(fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom('image-1', digest)), { maxLength: 3 }), {
          maxLength: 4,
        }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.uint32Array({ maxLength: 3000 }), fc.integer({ min: 1, max: 64 }), optionsArb, async (tokens, blockSize, opts) => {
        expect(await computeBlockHashesAsync(tokens, blockSize, opts as HashOptions)).toEqual(computeBlockHashes(tokens, blockSize, opts as HashOptions));
      }),
      { numRuns: 150 },
    );
  });

  it('hashes a large prompt like the sync form', async () => {
    const tokens = range(0, 1 << 20);
    const sync = computeBlockHashes(tokens, 16);
    const async = await computeBlockHashesAsync(tokens, 16);
    expect(async).toHaveLength(65_536);
    expect(async).toEqual(sync);
  });

  it('rejects each bad argument exactly as the sync form throws', async () => {
    const bad: Array<[unknown, unknown, unknown]> = [
      [[1, 2, 3, 4], 4, undefined],
      [Int32Array.of(1), 4, undefined],
      [range(0, 8), 0, undefined],
      [range(0, 8), Number.NaN, undefined],
      [range(0, 8), 2.5, undefined],
      [range(0, 8), (1 << 16) + 1, undefined],
      [range(0, 8), '4', undefined],
      [range(0, 8), 4, 'opts'],
      [range(0, 8), 4, { loraName: 7 }],
      [range(0, 8), 4, { mmHashes: 'x' }],
      [range(0, 8), 4, { mmHashes: [[-1n]] }],
      [range(0, 8), 4, { mmHashes: [[1.5]] }],
    ];
    for (const [tokens, blockSize, opts] of bad) {
      const sync = await outcome(() => computeBlockHashes(tokens as Uint32Array, blockSize as number, opts as HashOptions));
      const async = await outcome(() => computeBlockHashesAsync(tokens as Uint32Array, blockSize as number, opts as HashOptions));
      expect(sync).toHaveProperty('error');
      expect(async).toEqual(sync);
    }
  });
});

describe('computeBlockHashesBatch and computeBlockHashesBatchAsync', () => {
  const batchArb = fc
    .array(fc.uint32Array({ maxLength: 300 }), { maxLength: 12 })
    .chain((prompts) => fc.record({ prompts: fc.constant(prompts), lead: fc.integer({ min: 0, max: 40 }), blockSize: fc.integer({ min: 1, max: 32 }) }));

  it('hash each prompt as computeBlockHashes and chain it as computeSequenceHashes, sync and async alike', async () => {
    await fc.assert(
      fc.asyncProperty(batchArb, fc.constantFrom('', 'my-lora'), async ({ prompts, lead, blockSize }, loraName) => {
        const { tokens, offsets } = concat(prompts, lead);
        const sync = computeBlockHashesBatch(tokens, offsets, blockSize, { sequenceHashes: true, loraName });
        expect(await computeBlockHashesBatchAsync(tokens, offsets, blockSize, { sequenceHashes: true, loraName })).toEqual(sync);
        expect(sync.hashOffsets).toHaveLength(prompts.length + 1);
        prompts.forEach((p, i) => {
          const local = computeBlockHashes(p, blockSize, { loraName });
          expect(sync.hashes.subarray(sync.hashOffsets[i], sync.hashOffsets[i + 1])).toEqual(local);
          expect(sync.sequenceHashes!.subarray(sync.hashOffsets[i], sync.hashOffsets[i + 1])).toEqual(computeSequenceHashes(local));
        });
        const plain = await computeBlockHashesBatchAsync(tokens, offsets, blockSize, { loraName });
        expect(plain).toEqual({ hashes: sync.hashes, hashOffsets: sync.hashOffsets });
      }),
      { numRuns: 100 },
    );
  });

  it('refuse each bad argument with the same error, sync and async', async () => {
    const t = range(0, 16);
    const bad: Array<[unknown, unknown, unknown, unknown]> = [
      [[1, 2], Uint32Array.of(0, 2), 4, undefined],
      [t, [0, 16], 4, undefined],
      [t, new Uint32Array(0), 4, undefined],
      [t, Uint32Array.of(8, 4), 4, undefined],
      [t, Uint32Array.of(0, 17), 4, undefined],
      [t, Uint32Array.of(0, 16), 0, undefined],
      [t, Uint32Array.of(0, 16), 4, { sequenceHashes: 'yes' }],
      [t, Uint32Array.of(0, 16), 4, { cacheNamespace: 1 }],
    ];
    for (const [tokens, offsets, blockSize, opts] of bad) {
      const args = [tokens, offsets, blockSize, opts] as Parameters<typeof computeBlockHashesBatch>;
      const sync = await outcome(() => computeBlockHashesBatch(...args));
      const async = await outcome(() => computeBlockHashesBatchAsync(...args));
      expect(sync).toHaveProperty('error');
      expect(async).toEqual(sync);
    }
  });
});

describe('computeBlockHashes with EAGLE windows', () => {
  it('hashes blockSize + 1 tokens per block, stride blockSize', () => {
    // Dynamo 1.6.1: compute_block_hash_for_seq([1..9], 4, is_eagle=True) (more in hashing.dynamo.test.ts).
    expect(computeBlockHashes(range(1, 10), 4, { eagle: true })).toEqual(BigUint64Array.of(1914873892905420881n, 1929047464662796003n));
    expect(computeBlockHashes(range(1, 9), 4, { eagle: true })).toHaveLength(1);
    expect(computeBlockHashes(range(1, 5), 4, { eagle: true })).toHaveLength(0);
    expect(computeBlockHashes(new Uint32Array(0), 4, { eagle: true })).toHaveLength(0);
    expect(computeBlockHashes(range(1, 10), 4, { eagle: false })).toEqual(computeBlockHashes(range(1, 10), 4));
    expect(() => computeBlockHashes(range(1, 10), 4, { eagle: 1 as never })).toThrow(TypeError);
  });

  it('hashes the same windows asynchronously', async () => {
    expect(await computeBlockHashesAsync(range(1, 10), 4, { eagle: true })).toEqual(computeBlockHashes(range(1, 10), 4, { eagle: true }));
  });
});
