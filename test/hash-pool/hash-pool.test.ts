import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { computeBlockHashes, computeSequenceHashes } from '../../src/core/hashing.js';
import { native } from '../../src/core/binding.js';
import { callNative } from '../../src/core/errors.js';
import { concat } from '../core/batch-layout.js';
import { HashPool, splitByTokens, type BatchHashOptions } from '../../src/hash-pool/hash-pool.js';

// Per-prompt hashes from the single-prompt API: what every batch result must equal.
function expected(prompts: Uint32Array[], blockSize: number, opts: BatchHashOptions = {}) {
  return prompts.map((p) => {
    const local = computeBlockHashes(p, blockSize, { loraName: opts.loraName, cacheNamespace: opts.cacheNamespace });
    return { local, sequence: computeSequenceHashes(local) };
  });
}

/** Splits a flat batch result back into per-prompt arrays. */
function perPrompt(r: { hashes: BigUint64Array; hashOffsets: Uint32Array; sequenceHashes?: BigUint64Array }) {
  return Array.from({ length: r.hashOffsets.length - 1 }, (_, i) => ({
    local: r.hashes.slice(r.hashOffsets[i], r.hashOffsets[i + 1]),
    sequence: r.sequenceHashes?.slice(r.hashOffsets[i], r.hashOffsets[i + 1]),
  }));
}

const promptArb = fc.integer({ min: 0, max: 400 }).chain((len) => fc.uint32Array({ minLength: len, maxLength: len }));
const batchArb = fc.record({
  prompts: fc.array(promptArb, { minLength: 0, maxLength: 24 }),
  blockSize: fc.constantFrom(1, 4, 16, 64),
  lead: fc.integer({ min: 0, max: 40 }),
  loraName: fc.option(fc.constantFrom('my-lora', 'other'), { nil: undefined }),
  cacheNamespace: fc.option(fc.constantFrom('tenant-a'), { nil: undefined }),
});

describe('HashPool', () => {
  const pools: HashPool[] = [];
  const open = (opts?: ConstructorParameters<typeof HashPool>[0]) => {
    const pool = new HashPool(opts);
    pools.push(pool);
    return pool;
  };
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.destroy()));
  });

  describe('results', () => {
    const pool = new HashPool({ threads: 2, poolThresholdTokens: 64, minTaskTokens: 32 });
    afterAll(() => pool.close());

    it('pool and inline batches equal the single-prompt hashes on random batches', async () => {
      await fc.assert(
        fc.asyncProperty(batchArb, async ({ prompts, blockSize, lead, loraName, cacheNamespace }) => {
          const opts = { loraName, cacheNamespace, sequenceHashes: true };
          const want = expected(prompts, blockSize, opts);
          const { tokens, offsets } = concat(prompts, lead);
          const shared = new Uint32Array(new SharedArrayBuffer(tokens.byteLength));
          shared.set(tokens);
          for (const [input, placement] of [
            [tokens, 'inline'],
            [tokens, 'pool'],
            [shared, 'pool'],
          ] as const) {
            const r = await pool.hashBatch(input, offsets, blockSize, { ...opts, placement });
            expect(r.placement).toBe(placement);
            expect(r.hashOffsets[0]).toBe(0);
            expect(perPrompt(r)).toEqual(want);
          }
          for (const placement of ['inline', 'pool'] as const) {
            expect(await pool.hashPrompts(prompts, blockSize, { ...opts, placement })).toEqual(want);
          }
        }),
        { numRuns: 40 },
      );
    });

    it('leaves out sequence hashes unless asked, and leaves the caller’s tokens intact', async () => {
      const prompts = [Uint32Array.from({ length: 100 }, (_, i) => i), Uint32Array.of(7, 8, 9, 10)];
      const { tokens, offsets } = concat(prompts);
      const copy = tokens.slice();
      const r = await pool.hashBatch(tokens, offsets, 4, { placement: 'pool' });
      expect(r.sequenceHashes).toBeUndefined();
      expect(tokens).toEqual(copy);
      const byPrompt = await pool.hashPrompts(prompts, 4, { placement: 'pool' });
      expect(byPrompt[1]).toEqual({ local: computeBlockHashes(prompts[1], 4) });
    });
  });

  it('hashes big prompts inline (one native call each) like small ones (one batch)', async () => {
    const pool = open({ threads: 1, poolThresholdTokens: 1 << 30 });
    const big = [5000, 3100, 7].map((n, i) => Uint32Array.from({ length: n }, (_, j) => (i * 31 + j * 7) % 152_000));
    for (const prompts of [big, big.slice(0, 1), big.map((p) => p.subarray(0, 100))]) {
      expect(await pool.hashPrompts(prompts, 16, { sequenceHashes: true })).toEqual(expected(prompts, 16));
    }
    expect(pool.stats()).toEqual({ inlineBatches: 3, poolBatches: 0, poolTasks: 0 });
  });

  it('chooses the placement by total tokens and splits big batches across the threads', async () => {
    const pool = open({ threads: 2, poolThresholdTokens: 1000, minTaskTokens: 500 });
    const prompts = Array.from({ length: 8 }, (_, i) => Uint32Array.from({ length: 200 }, (_, j) => i * 1000 + j));
    const want = expected(prompts, 16).map((e) => ({ local: e.local }));
    expect(await pool.hashPrompts(prompts.slice(0, 4), 16)).toEqual(want.slice(0, 4)); // 800 tokens
    expect(pool.stats()).toEqual({ inlineBatches: 1, poolBatches: 0, poolTasks: 0 });
    expect(await pool.hashPrompts(prompts, 16)).toEqual(want); // 1600 tokens: two tasks of 800
    expect(pool.stats()).toEqual({ inlineBatches: 1, poolBatches: 1, poolTasks: 2 });
    const { tokens, offsets } = concat(prompts);
    const r = await pool.hashBatch(tokens, offsets, 16);
    expect(r.placement).toBe('pool');
    expect(perPrompt(r).map((p) => ({ local: p.local }))).toEqual(want);
  });

  it('hashes an empty batch and prompts shorter than a block', async () => {
    const pool = open({ threads: 1 });
    for (const placement of ['inline', 'pool'] as const) {
      const empty = await pool.hashBatch(new Uint32Array(0), Uint32Array.of(0), 16, { placement });
      expect(empty.hashes).toHaveLength(0);
      expect(Array.from(empty.hashOffsets)).toEqual([0]);
      expect(await pool.hashPrompts([], 16, { placement })).toEqual([]);
      const short = await pool.hashPrompts([Uint32Array.of(1, 2, 3), new Uint32Array(0)], 4, { placement, sequenceHashes: true });
      expect(short.map((p) => [p.local.length, p.sequence?.length])).toEqual([
        [0, 0],
        [0, 0],
      ]);
    }
  });

  it('refuses bad arguments with TypeError or RangeError, and stays usable', async () => {
    const pool = open({ threads: 1 });
    const t = Uint32Array.from({ length: 32 }, (_, i) => i);
    const off = Uint32Array.of(0, 16, 32);
    const bad: Array<[() => Promise<unknown>, ErrorConstructor, RegExp]> = [
      [() => pool.hashBatch([1, 2] as never, off, 16), TypeError, /tokens must be a Uint32Array/],
      [() => pool.hashBatch(Int32Array.from(t) as never, off, 16), TypeError, /tokens/],
      [() => pool.hashBatch(t, [0, 16] as never, 16), TypeError, /offsets must be a Uint32Array/],
      [() => pool.hashBatch(t, new Uint32Array(0), 16), RangeError, /at least one entry/],
      [() => pool.hashBatch(t, Uint32Array.of(0, 20, 10), 16), RangeError, /non-decreasing/],
      [() => pool.hashBatch(t, Uint32Array.of(0, 33), 16), RangeError, /past the 32 tokens/],
      [() => pool.hashBatch(t, off, 0), RangeError, /blockSize/],
      [() => pool.hashBatch(t, off, Number.NaN), RangeError, /blockSize/],
      [() => pool.hashBatch(t, off, 2.5), RangeError, /blockSize/],
      [() => pool.hashBatch(t, off, '16' as never), TypeError, /blockSize/],
      [() => pool.hashBatch(t, off, 16, 'x' as never), TypeError, /opts must be an object/],
      [() => pool.hashBatch(t, off, 16, { loraName: 3 as never }), TypeError, /loraName/],
      [() => pool.hashBatch(t, off, 16, { sequenceHashes: 'yes' as never }), TypeError, /sequenceHashes/],
      [() => pool.hashBatch(t, off, 16, { placement: 'gpu' as never }), RangeError, /placement/],
      [() => pool.hashBatch(t, off, 16, { signal: {} as never }), TypeError, /AbortSignal/],
      [() => pool.hashPrompts(t as never, 16), TypeError, /prompts must be an array/],
      [() => pool.hashPrompts([t, [1, 2]] as never, 16), TypeError, /prompts\[1\] must be a Uint32Array/],
      [() => pool.hashPrompts([t], -1), RangeError, /blockSize/],
    ];
    for (const [call, type, message] of bad) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, String(message)).toBeInstanceOf(type);
      expect((err as Error).message).toMatch(message);
    }
    expect(() => new HashPool({ threads: 0 })).toThrow(RangeError);
    expect(() => new HashPool({ threads: 1.5 })).toThrow(RangeError);
    expect(() => new HashPool({ poolThresholdTokens: -1 })).toThrow(RangeError);
    expect(() => new HashPool({ minTaskTokens: 0 })).toThrow(RangeError);
    expect(() => new HashPool({ idleTimeoutMs: '1' as never })).toThrow(TypeError);
    expect(() => new HashPool(7 as never)).toThrow(TypeError);
    const r = await pool.hashBatch(t, off, 16, { placement: 'pool' });
    expect(r.hashes).toEqual(computeBlockHashes(t, 16));
  });

  it('rejects a batch whose signal is already aborted', async () => {
    const pool = open({ threads: 1 });
    const t = Uint32Array.from({ length: 64 }, (_, i) => i);
    await expect(pool.hashBatch(t, Uint32Array.of(0, 64), 16, { placement: 'pool', signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect((await pool.hashBatch(t, Uint32Array.of(0, 64), 16, { placement: 'pool' })).hashes).toHaveLength(4);
  });

  it('close() lets running batches finish, then refuses new ones', async () => {
    const pool = open({ threads: 1 });
    const prompts = Array.from({ length: 4 }, (_, i) => Uint32Array.from({ length: 50_000 }, (_, j) => i + j));
    const running = [pool.hashPrompts(prompts, 16, { placement: 'pool' }), pool.hashPrompts(prompts, 16, { placement: 'pool' })];
    await pool.close();
    expect(pool.closed).toBe(true);
    for (const r of await Promise.all(running)) expect(r).toEqual(expected(prompts, 16).map((e) => ({ local: e.local })));
    await expect(pool.hashPrompts(prompts, 16)).rejects.toThrow(/HashPool is closed/);
    await expect(pool.hashBatch(prompts[0], Uint32Array.of(0, 16), 16)).rejects.toThrow(/HashPool is closed/);
    await pool.close(); // idempotent
  });

  it('destroy() rejects queued batches and refuses new ones', async () => {
    const pool = open({ threads: 1 });
    const big = [Uint32Array.from({ length: 1 << 20 }, (_, j) => j)];
    const batches = [1, 2, 3].map(() => pool.hashPrompts(big, 16, { placement: 'pool' }));
    const settled = Promise.allSettled(batches);
    await pool.destroy();
    const outcomes = await settled;
    // One thread: at least the last batch was still queued when the pool went down.
    expect(outcomes[2].status).toBe('rejected');
    await expect(pool.hashPrompts(big, 16)).rejects.toThrow(/HashPool is closed/);
  });

  it('a pool that only saw small batches closes without ever starting a thread', async () => {
    const pool = open();
    await pool.hashPrompts([Uint32Array.of(1, 2, 3, 4)], 4);
    expect(pool.stats().poolTasks).toBe(0);
    await pool.close();
  });
});

describe('computeBlockHashesBatchInto (the addon call behind the pool)', () => {
  const tokens = Uint32Array.from({ length: 40 }, (_, i) => i * 3);
  const offsets = Uint32Array.of(0, 16, 40);
  const call = (hashes: BigUint64Array, hashOffsets: Uint32Array, sequence?: BigUint64Array, off = offsets, seed = 1337n) =>
    callNative(() => native.computeBlockHashesBatchInto(tokens, off, 4, seed, hashes, hashOffsets, sequence));

  it('writes local and sequence hashes and per-prompt offsets in place', () => {
    const hashes = new BigUint64Array(10);
    const seq = new BigUint64Array(10);
    const hashOffsets = new Uint32Array(3);
    expect(call(hashes, hashOffsets, seq)).toBe(10);
    expect(Array.from(hashOffsets)).toEqual([0, 4, 10]);
    const second = computeBlockHashes(tokens.subarray(16, 40), 4);
    expect(hashes.subarray(4)).toEqual(second);
    expect(seq.subarray(4)).toEqual(computeSequenceHashes(second));
  });

  it('refuses outputs that are too small, mis-sized or overlapping, and bad offsets or seeds', () => {
    const ok = new Uint32Array(3);
    expect(() => call(new BigUint64Array(9), ok)).toThrow(/hashes must hold at least 10/);
    expect(() => call(new BigUint64Array(10), new Uint32Array(2))).toThrow(/hashOffsets must hold 3/);
    expect(() => call(new BigUint64Array(10), ok, new BigUint64Array(2))).toThrow(/sequence must hold at least 10/);
    const shared = new ArrayBuffer(200);
    expect(() => call(new BigUint64Array(shared, 0, 10), new Uint32Array(shared, 40, 3))).toThrow(/must not overlap/);
    expect(() => call(new BigUint64Array(10), ok, undefined, Uint32Array.of(0, 41, 40))).toThrow(RangeError);
    expect(() => call(new BigUint64Array(10), ok, undefined, new Uint32Array(0))).toThrow(/at least one entry/);
    expect(() => call(new BigUint64Array(10), ok, undefined, offsets, -1n)).toThrow(/seed/);
    expect(() => call(new BigUint64Array(10), ok, undefined, offsets, 1n << 64n)).toThrow(/seed/);
  });
});

describe('splitByTokens', () => {
  it('balances token counts across at most `parts` runs of at least `minTokens`', () => {
    const offsets = Uint32Array.from({ length: 11 }, (_, i) => i * 100); // 10 prompts of 100
    expect(splitByTokens(offsets, 2, 1)).toEqual([
      [0, 5],
      [5, 10],
    ]);
    expect(splitByTokens(offsets, 4, 400)).toEqual([
      [0, 5],
      [5, 10],
    ]);
    expect(splitByTokens(offsets, 8, 5000)).toEqual([[0, 10]]);
    // The prompt that crosses the midpoint stays in the first run: here, all of them.
    expect(splitByTokens(Uint32Array.of(0, 10, 1000), 2, 1)).toEqual([[0, 2]]);
    expect(splitByTokens(Uint32Array.of(7), 4, 1)).toEqual([[0, 0]]);
  });

  it('covers every prompt exactly once, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 50 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 5000 }),
        (lens, parts, min) => {
          const offsets = new Uint32Array(lens.length + 1);
          lens.forEach((n, i) => (offsets[i + 1] = offsets[i] + n));
          const runs = splitByTokens(offsets, parts, min);
          expect(runs.length).toBeLessThanOrEqual(parts);
          expect(runs[0][0]).toBe(0);
          expect(runs[runs.length - 1][1]).toBe(lens.length);
          for (let i = 1; i < runs.length; i++) expect(runs[i][0]).toBe(runs[i - 1][1]);
          for (const [a, b] of runs) if (lens.length > 0) expect(b).toBeGreaterThan(a);
        },
      ),
    );
  });
});
