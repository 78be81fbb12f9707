import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer, MAX_BLOCKS_PER_CALL } from '../../src/core/indexer.js';
import { BS, fakeClock, hashes, localOf, match, tokensOf } from './indexer-fixtures.js';

describe('KvIndexer in events mode', () => {
  it('matches the leading blocks each (worker, dpRank) holds, best first', () => {
    const ix = new KvIndexer({ blockSize: BS });
    expect(ix.applyStored(1, 0, null, hashes(11, 12, 13), tokensOf([10, 20, 30]))).toBe(true);
    expect(ix.applyStored(2, 0, null, hashes(21), tokensOf([10]))).toBe(true);
    expect(ix.applyStored(2, 1, null, hashes(31, 32), tokensOf([10, 20]))).toBe(true);
    expect(ix.applyStored(3, 0, null, hashes(41, 42), tokensOf([20, 10]))).toBe(true);
    expect(ix.findMatches(localOf([10, 20, 30, 40]))).toEqual([match(1, 3), match(2, 2, 1), match(2, 1)]);
    expect(ix.findMatches(localOf([20]))).toEqual([match(3, 1)]);
    expect(ix.findMatches(localOf([50]))).toEqual([]);
    expect(ix.findMatches(new BigUint64Array(0))).toEqual([]);
    const s = ix.stats();
    expect([s.blocks, s.nodes, s.workers, s.eventsApplied]).toEqual([8, 5, 4, 4]);
    expect(s.approxBytes).toBeGreaterThan(0);
    expect(s.bytesPerBlock).toBeCloseTo(s.approxBytes / 8);
    expect(ix.workers()).toEqual([
      { worker: 1, dpRank: 0 },
      { worker: 2, dpRank: 0 },
      { worker: 2, dpRank: 1 },
      { worker: 3, dpRank: 0 },
    ]);
    expect(ix.blocksOf(2, 1)).toBe(2);
  });

  it('chains events by the engine hash of the parent, whatever hash scheme the engine uses', () => {
    const ix = new KvIndexer({ blockSize: BS });
    const big = (1n << 64n) - 1n;
    expect(ix.applyStored(7, 0, null, hashes(big, 0n), tokensOf([1, 2]))).toBe(true);
    expect(ix.applyStored(7, 0, 0n, hashes(5n), tokensOf([3]))).toBe(true);
    expect(ix.applyStored(7, 0, 5n, hashes(123456789n), tokensOf([4]))).toBe(true);
    expect(ix.findMatches(localOf([1, 2, 3, 4, 5]))).toEqual([match(7, 4)]);
    // The same engine hashes on another worker name that worker's blocks only.
    expect(ix.applyStored(8, 0, 5n, hashes(6n), tokensOf([9]))).toBe(false);
  });

  it('hashes with the LoRA seed and multimodal items, like computeBlockHashes', () => {
    const ix = new KvIndexer({ blockSize: BS });
    ix.applyStored(1, 0, null, hashes(1, 2), tokensOf([1, 2]), { loraName: 'adapter-a' });
    ix.applyStored(2, 0, null, hashes(1, 2), tokensOf([1, 2]), { mmHashes: [null, ['image-1']] });
    expect(ix.findMatches(localOf([1, 2], { loraName: 'adapter-a' }))).toEqual([match(1, 2)]);
    expect(ix.findMatches(localOf([1, 2]))).toEqual([match(2, 1)]);
    expect(ix.findMatches(localOf([1, 2], { mmHashes: [null, ['image-1']] }))).toEqual([match(2, 2)]);
  });

  it('refuses conflicting events whole and counts them by reason', () => {
    const ix = new KvIndexer({ blockSize: BS });
    ix.applyStored(1, 0, null, hashes(100, 101), tokensOf([1, 2]));
    const before = ix.findMatches(localOf([1, 2, 3, 4]));
    expect(ix.applyStored(1, 0, 999n, hashes(102), tokensOf([3]))).toBe(false);
    expect(ix.applyStored(1, 1, 101n, hashes(102), tokensOf([3]))).toBe(false); // parents are per (worker, dpRank)
    expect(ix.applyStored(1, 0, 101n, hashes(102, 101), tokensOf([3, 4]))).toBe(false);
    expect(ix.applyStored(1, 0, 101n, hashes(102, 103, 102), tokensOf([3, 4, 5]))).toBe(false);
    expect(ix.applyStored(1, 0, 101n, hashes(104, 100), tokensOf([3, 4]))).toBe(false); // 100 names block [1]
    expect(ix.applyRemoved(1, 0, hashes(555, 556))).toBe(0);
    expect(ix.applyRemoved(9, 0, hashes(100))).toBe(0);
    expect(ix.findMatches(localOf([1, 2, 3, 4]))).toEqual(before);
    const s = ix.stats();
    expect(s.rejected).toEqual({
      unknownParent: 2,
      selfParent: 1,
      duplicateHash: 2,
      hashCollision: 0,
      indexFull: 0,
      malformed: 0,
      unknownRemoval: 3,
    });
    expect([s.blocks, s.nodes]).toEqual([2, 2]);
  });

  it('storing the same blocks again is harmless; a second engine hash for a block holds it too', () => {
    const ix = new KvIndexer({ blockSize: BS });
    expect(ix.applyStored(1, 0, null, hashes(10, 11), tokensOf([1, 2]))).toBe(true);
    expect(ix.applyStored(1, 0, null, hashes(10, 11, 12), tokensOf([1, 2, 3]))).toBe(true);
    expect(ix.applyStored(1, 0, null, hashes(20), tokensOf([1]))).toBe(true); // e.g. another cache salt
    expect(ix.stats().blocks).toBe(3);
    expect(ix.applyRemoved(1, 0, hashes(10))).toBe(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 3)]);
    expect(ix.applyRemoved(1, 0, hashes(20))).toBe(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([]);
  });

  it('removes blocks, clears a (worker, dpRank), removes every rank of a worker', () => {
    const ix = new KvIndexer({ blockSize: BS });
    for (const [w, r] of [
      [1, 0],
      [1, 1],
      [2, 0],
    ]) {
      ix.applyStored(w, r, null, hashes(w * 100 + r * 10, w * 100 + r * 10 + 1, w * 100 + r * 10 + 2), tokensOf([1, 2, 3]));
    }
    expect(ix.applyRemoved(1, 0, hashes(101))).toBe(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 3, 1), match(2, 3), match(1, 1)]);
    ix.applyCleared(2, 0);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 3, 1), match(1, 1)]);
    ix.removeWorker(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([]);
    const s = ix.stats();
    expect([s.blocks, s.nodes, s.workers]).toEqual([0, 0, 0]);
    // Cleared pairs start afresh: their old engine hashes are unknown.
    expect(ix.applyStored(2, 0, 202n, hashes(203), tokensOf([4]))).toBe(false);
  });

  it('earlyExit stops with one candidate left, whose count is then a lower bound', () => {
    const ix = new KvIndexer({ blockSize: BS });
    ix.applyStored(1, 0, null, hashes(1, 2, 3, 4, 5), tokensOf([1, 2, 3, 4, 5]));
    ix.applyStored(2, 0, null, hashes(1, 2, 3), tokensOf([1, 2, 9]));
    const q = localOf([1, 2, 3, 4, 5]);
    expect(ix.findMatches(q)).toEqual([match(1, 5), match(2, 2)]);
    // Worker 2 leaves where the edge it does not hold starts; worker 1 is then alone and credited
    // with the blocks walked so far (2), a lower bound of its 5, at least every other count.
    expect(ix.findMatches(q, { earlyExit: true })).toEqual([match(1, 2), match(2, 2)]);
    expect(ix.findMatches(q, { earlyExit: false })).toEqual([match(1, 5), match(2, 2)]);
  });

  it('keeps worker ids exact past the small-integer range (up to 2^53 - 1)', () => {
    const ix = new KvIndexer({ blockSize: BS });
    const big = [2 ** 30 - 1, 2 ** 30, 2 ** 31 + 5, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER];
    big.forEach((w, i) => expect(ix.applyStored(w, 0xffff, null, hashes(100 + i), tokensOf([10]))).toBe(true));
    expect(ix.applyStored(3, 0, null, hashes(1, 2), tokensOf([10, 20]))).toBe(true);
    const got = ix.findMatches(localOf([10, 20]));
    expect(got).toEqual([match(3, 2), ...big.map((w) => match(w, 1, 0xffff))]);
    expect(got.map((m) => m.worker)).toEqual([3, ...big]);
    // The largest id read from its low int alone, and the smallest that needs the high int.
    for (const w of [2 ** 31 - 1, 2 ** 31]) {
      const ix2 = new KvIndexer({ blockSize: BS });
      ix2.applyStored(w, 2, null, hashes(1), tokensOf([7]));
      ix2.applyStored(1, 0, null, hashes(2), tokensOf([7]));
      expect(ix2.findMatches(localOf([7]))).toEqual([match(1, 1), match(w, 1, 2)]);
      const out = new Float64Array(6);
      expect(ix2.findMatchesInto(localOf([7]), out)).toBe(2);
      expect([...out]).toEqual([1, 0, 1, w, 2, 1]);
    }
  });

  it('returns every match past 64 (worker, dpRank) pairs', () => {
    const ix = new KvIndexer({ blockSize: BS });
    for (let w = 0; w < 200; w++) ix.applyStored(w, w % 3, null, hashes(w), tokensOf([1]));
    const matches = ix.findMatches(localOf([1, 2]));
    expect(matches).toHaveLength(200);
    expect(matches[0]).toEqual(match(0, 1));
    expect(matches.map((m) => m.worker)).toEqual([...Array(200).keys()]);
  });

  it('findMatchesInto writes the same matches as triples, as many as fit', () => {
    const ix = new KvIndexer({ blockSize: BS });
    ix.applyStored(1, 0, null, hashes(11, 12), tokensOf([10, 20]));
    ix.applyStored(2, 1, null, hashes(21), tokensOf([10]));
    for (let w = 10; w < 110; w++) ix.applyStored(w, 0, null, hashes(w), tokensOf([10]));
    const q = localOf([10, 20]);
    const friendly = ix.findMatches(q);
    const out = new Float64Array(3 * 200).fill(-1);
    expect(ix.findMatchesInto(q, out)).toBe(102);
    const triples = Array.from({ length: 102 }, (_, i) => ({ worker: out[3 * i], dpRank: out[3 * i + 1], blocks: out[3 * i + 2] }));
    expect(triples).toEqual(friendly);
    expect(out[3 * 102]).toBe(-1);
    // Room for two matches (and a spare number): the two best, and the count of all.
    const small = new Float64Array(7).fill(-1);
    expect(ix.findMatchesInto(q, small, { earlyExit: false })).toBe(102);
    expect([...small]).toEqual([1, 0, 2, 2, 1, 1, -1]);
    expect(ix.findMatchesInto(localOf([99]), small)).toBe(0);
    expect(() => ix.findMatchesInto(q, [] as never)).toThrow(TypeError);
    expect(() => ix.findMatchesInto(q, new Float32Array(3) as never)).toThrow(TypeError);
    expect(() => ix.findMatchesInto([1n] as never, out)).toThrow(TypeError);
  });

  it('refuses approximate-mode calls', () => {
    const ix = new KvIndexer({ blockSize: BS });
    expect(() => ix.recordRouting(1, 0, localOf([1]))).toThrow(/recordRouting needs an indexer in 'approximate' mode/);
    expect(ix.expire()).toBe(0);
  });
});

describe('events cap (maxBlocks)', () => {
  it('evicts the least recently matched leaves first', () => {
    const ix = new KvIndexer({ blockSize: BS, maxBlocks: 6, pruneFraction: 1 });
    ix.applyStored(1, 0, null, hashes(10, 11), tokensOf([1, 2])); // oldest, but matched below
    ix.applyStored(1, 0, null, hashes(20, 21), tokensOf([5, 6]));
    ix.applyStored(1, 0, null, hashes(30, 31), tokensOf([8, 9]));
    ix.findMatches(localOf([1, 2])); // [1, 2] becomes the most recent
    ix.findMatches(localOf([8])); // then block [8], not [8, 9]
    ix.applyStored(1, 0, null, hashes(40, 41, 42), tokensOf([12, 13, 14])); // 9 > 6: three leaves go
    expect(ix.stats().evictions).toBe(3);
    expect(ix.findMatches(localOf([5, 6]))).toEqual([]); // [6] then, once a leaf, [5]
    expect(ix.findMatches(localOf([8, 9]))).toEqual([match(1, 1)]); // [9], older than [8]
    expect(ix.findMatches(localOf([1, 2]))).toEqual([match(1, 2)]);
    expect(ix.findMatches(localOf([12, 13, 14]))).toEqual([match(1, 3)]);
    expect(ix.stats().blocks).toBe(6);
    // An evicted block's engine hash is gone with it.
    expect(ix.applyRemoved(1, 0, hashes(21))).toBe(0);
  });

  it('prunes down to pruneFraction of the cap', () => {
    const ix = new KvIndexer({ blockSize: BS, maxBlocks: 100, pruneFraction: 0.5 });
    for (let i = 0; i < 101; i++) ix.applyStored(1, 0, null, hashes(i), tokensOf([i * 10]));
    expect(ix.stats().blocks).toBe(50);
    expect(ix.stats().evictions).toBe(51);
  });
});

describe('approximate mode', () => {
  it('matches routed prompts until their TTL passes', () => {
    const t = fakeClock();
    const ix = new KvIndexer({ blockSize: BS, mode: 'approximate', ttlMs: 1_000, clock: t.clock });
    expect(ix.mode).toBe('approximate');
    ix.recordRouting(1, 0, localOf([1, 2, 3]));
    t.advance(400);
    ix.recordRouting(2, 1, localOf([1, 2]));
    t.advance(599);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 3), match(2, 2, 1)]);
    t.advance(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(2, 2, 1)]);
    expect(ix.stats().expired).toBe(3);
    t.advance(400);
    expect(ix.expire()).toBe(2);
    expect(ix.stats()).toMatchObject({ blocks: 0, nodes: 0, workers: 0, routingsRecorded: 2 });
  });

  it('routing again refreshes what it routes', () => {
    const t = fakeClock();
    const ix = new KvIndexer({ blockSize: BS, mode: 'approximate', ttlMs: 1_000, clock: t.clock });
    ix.recordRouting(1, 0, localOf([1, 2, 3]));
    t.advance(800);
    ix.recordRouting(1, 0, localOf([1, 2]));
    t.advance(200);
    expect(ix.expire()).toBe(1);
    expect(ix.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 2)]);
  });

  it('prunes the oldest entries past approxMaxBlocks', () => {
    const t = fakeClock();
    const ix = new KvIndexer({ blockSize: BS, mode: 'approximate', approxMaxBlocks: 10, pruneFraction: 0.5, clock: t.clock });
    ix.recordRouting(1, 0, localOf([1, 2, 3, 4]));
    t.advance(1);
    ix.recordRouting(2, 0, localOf([9, 8, 7]));
    t.advance(1);
    ix.recordRouting(3, 0, localOf([1, 2]));
    t.advance(1);
    ix.recordRouting(4, 0, localOf([5, 6])); // 11 > 10: down to 5, oldest (and deepest) first
    expect(ix.stats()).toMatchObject({ blocks: 5, evictions: 6 });
    expect(ix.findMatches(localOf([1, 2, 3, 4]))).toEqual([match(3, 2)]);
    expect(ix.findMatches(localOf([9, 8, 7]))).toEqual([match(2, 1)]);
    expect(ix.findMatches(localOf([5, 6]))).toEqual([match(4, 2)]);
  });

  it('refuses events-mode calls and keeps removeWorker', () => {
    const ix = new KvIndexer({ blockSize: BS, mode: 'approximate' });
    expect(() => ix.applyStored(1, 0, null, hashes(1), tokensOf([1]))).toThrow(/applyStored needs an indexer in 'events' mode/);
    expect(() => ix.applyRemoved(1, 0, hashes(1))).toThrow(/'events' mode/);
    expect(() => ix.applyCleared(1, 0)).toThrow(/'events' mode/);
    ix.recordRouting(1, 0, localOf([1]));
    ix.removeWorker(1);
    expect(ix.findMatches(localOf([1]))).toEqual([]);
  });
});

describe('snapshot and restore', () => {
  function sample() {
    const ix = new KvIndexer({ blockSize: BS, maxBlocks: 1000 });
    ix.applyStored(1, 0, null, hashes(10, 11, 12), tokensOf([1, 2, 3]));
    ix.applyStored(2, 3, null, hashes(20, 21), tokensOf([1, 2]));
    ix.applyStored(2, 3, 21n, hashes(22), tokensOf([7]));
    return ix;
  }

  it('round trips matches, engine hashes, mode and options', () => {
    const a = sample();
    const bytes = a.snapshot();
    expect(bytes).toBeInstanceOf(Uint8Array);
    const b = KvIndexer.restore(bytes);
    expect([b.blockSize, b.mode]).toEqual([BS, 'events']);
    for (const q of [[1, 2, 3], [1, 2, 7], [1]]) expect(b.findMatches(localOf(q))).toEqual(a.findMatches(localOf(q)));
    // Engine hashes survive: children by parent hash and removals work on the copy.
    expect(b.applyStored(1, 0, 12n, hashes(13), tokensOf([4]))).toBe(true);
    expect(b.applyRemoved(2, 3, hashes(20, 22))).toBe(2);
    expect(b.findMatches(localOf([1, 2, 3, 4]))).toEqual([match(1, 4)]);
    expect(b.stats().blocks).toBe(5);
    // The cap came along.
    for (let i = 0; i < 1100; i++) b.applyStored(9, 0, null, hashes(1000 + i), tokensOf([100 + i]));
    expect(b.stats().blocks).toBeLessThanOrEqual(1000);
    // A Node Buffer is a Uint8Array too.
    expect(KvIndexer.restore(Buffer.from(bytes)).findMatches(localOf([1, 2, 3]))).toEqual(a.findMatches(localOf([1, 2, 3])));
  });

  it('round trips approximate mode with its times, TTL and clock', () => {
    const t = fakeClock();
    const a = new KvIndexer({ blockSize: BS, mode: 'approximate', ttlMs: 100, clock: t.clock });
    a.recordRouting(1, 0, localOf([1, 2, 3]));
    t.advance(50);
    a.recordRouting(5, 1, localOf([1, 2]));
    const b = KvIndexer.restore(a.snapshot(), { clock: t.clock });
    expect(b.mode).toBe('approximate');
    t.advance(49);
    expect(b.findMatches(localOf([1, 2, 3]))).toEqual([match(1, 3), match(5, 2, 1)]);
    t.advance(1);
    expect(b.findMatches(localOf([1, 2, 3]))).toEqual([match(5, 2, 1)]);
  });

  it('refuses damaged, truncated and unknown-version bytes with a clear Error', () => {
    const good = sample().snapshot();
    const flipped = good.slice();
    flipped[30] ^= 0x10;
    expect(() => KvIndexer.restore(flipped)).toThrow(/checksum/);
    expect(() => KvIndexer.restore(good.subarray(0, good.length - 1))).toThrow(/truncated/);
    expect(() => KvIndexer.restore(good.subarray(0, 10))).toThrow(/truncated/);
    expect(() => KvIndexer.restore(new Uint8Array(0))).toThrow(/truncated/);
    const version = good.slice();
    version[8] = 99;
    expect(() => KvIndexer.restore(version)).toThrow(/unsupported snapshot version 99/);
    const magic = good.slice();
    magic[0] = 0;
    expect(() => KvIndexer.restore(magic)).toThrow(/not a kvroute indexer snapshot/);
    expect(() => KvIndexer.restore([1, 2, 3] as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => KvIndexer.restore(good, { clock: 5 as never })).toThrow(TypeError);
    // Every truncation is refused (never a crash).
    for (let n = 0; n < good.length; n += 7) expect(() => KvIndexer.restore(good.subarray(0, n))).toThrow(Error);
  });
});

describe('bad input', () => {
  const ix = new KvIndexer({ blockSize: BS });
  const h = hashes(1);
  const t = tokensOf([1]);

  it('refuses bad options', () => {
    expect(() => new KvIndexer(undefined as never)).toThrow(TypeError);
    expect(() => new KvIndexer({} as never)).toThrow(TypeError);
    expect(() => new KvIndexer({ blockSize: 0 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: 2 ** 17 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: 1.5 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, mode: 'fast' as never })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, mode: 1 as never })).toThrow(TypeError);
    expect(() => new KvIndexer({ blockSize: BS, maxBlocks: 0 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, ttlMs: -1 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, ttlMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, ttlMs: '5' as never })).toThrow(TypeError);
    expect(() => new KvIndexer({ blockSize: BS, approxMaxBlocks: Number.NaN })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, pruneFraction: 0 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, pruneFraction: 1.5 })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, clock: 'now' as never })).toThrow(TypeError);
  });

  it('refuses bad worker ids and ranks', () => {
    for (const w of [-1, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) {
      expect(() => ix.applyStored(w, 0, null, h, t)).toThrow(RangeError);
      expect(() => ix.applyRemoved(w, 0, h)).toThrow(RangeError);
      expect(() => ix.applyCleared(w, 0)).toThrow(RangeError);
      expect(() => ix.removeWorker(w)).toThrow(RangeError);
    }
    expect(() => ix.applyStored('1' as never, 0, null, h, t)).toThrow(TypeError);
    expect(() => ix.applyStored(1n as never, 0, null, h, t)).toThrow(TypeError);
    for (const r of [-1, 65536, 0.5, Number.NaN]) expect(() => ix.applyStored(1, r, null, h, t)).toThrow(RangeError);
    expect(() => ix.applyStored(1, undefined as never, null, h, t)).toThrow(TypeError);
    expect(() => ix.blocksOf(-3)).toThrow(RangeError);
  });

  it('refuses bad hashes, tokens and options', () => {
    expect(() => ix.applyStored(1, 0, null, [1n] as never, t)).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, null, new BigInt64Array(1) as never, t)).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, null, h, [1, 2, 3, 4] as never)).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, null, h, new Int32Array(4) as never)).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, 5 as never, h, t)).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, -1n, h, t)).toThrow(RangeError);
    expect(() => ix.applyStored(1, 0, 1n << 64n, h, t)).toThrow(RangeError);
    expect(() => ix.applyStored(1, 0, null, h, tokensOf([1, 2]))).toThrow(/tokenIds must hold blockHashes.length x blockSize = 1 x 4 = 4 tokens, got 8/);
    expect(() => ix.applyStored(1, 0, null, h, t.subarray(0, 3))).toThrow(RangeError);
    expect(() => ix.applyStored(1, 0, null, h, t, { loraName: 3 as never })).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, null, h, t, { mmHashes: 'x' as never })).toThrow(TypeError);
    expect(() => ix.applyStored(1, 0, null, h, t, { mmHashes: [['a'], ['b']] })).toThrow(/multimodal hashes list 2 blocks but the event has 1/);
    expect(() => ix.applyStored(1, 0, null, h, t, 'x' as never)).toThrow(TypeError);
    expect(() => ix.findMatches([1n] as never)).toThrow(TypeError);
    expect(() => ix.findMatches(h, { earlyExit: 1 as never })).toThrow(TypeError);
    expect(() => ix.findMatches(h, 7 as never)).toThrow(TypeError);
    expect(() => ix.applyRemoved(1, 0, new Uint32Array(2) as never)).toThrow(TypeError);
    // Nothing of the refused calls was applied.
    expect(ix.stats()).toMatchObject({ blocks: 0, eventsApplied: 0 });
  });

  it('refuses huge arrays without touching the index', () => {
    const huge = new BigUint64Array(MAX_BLOCKS_PER_CALL + 1);
    expect(() => ix.findMatches(huge)).toThrow(/more than the 1048576 accepted per call/);
    expect(() => ix.applyRemoved(1, 0, huge)).toThrow(RangeError);
    expect(() => ix.applyStored(1, 0, null, huge, new Uint32Array(0))).toThrow(RangeError);
    const approx = new KvIndexer({ blockSize: BS, mode: 'approximate' });
    expect(() => approx.recordRouting(1, 0, huge)).toThrow(RangeError);
  });

  it('refuses a clock that returns no finite time', () => {
    const broken = new KvIndexer({ blockSize: BS, clock: () => Number.NaN });
    expect(() => broken.findMatches(h)).toThrow(RangeError);
    expect(() => broken.applyStored(1, 0, null, h, t)).toThrow(/finite/);
  });
});

describe('KvIndexer with EAGLE windows', () => {
  it('takes stored events of blocks x blockSize + 1 tokens and matches prompts hashed the same way', () => {
    const ix = new KvIndexer({ blockSize: BS, eagle: true });
    expect(ix.eagle).toBe(true);
    expect(new KvIndexer({ blockSize: BS }).eagle).toBe(false);
    const t = Uint32Array.from({ length: 3 * BS + 1 }, (_, i) => i + 1);
    expect(() => ix.applyStored(1, 0, null, hashes(1, 2, 3), t.subarray(0, 3 * BS))).toThrow(/3 x 4 \+ 1 \(EAGLE\) = 13 tokens, got 12/);
    expect(ix.applyStored(1, 0, null, hashes(1, 2, 3), t)).toBe(true);
    const prompt = Uint32Array.from({ length: 3 * BS + 5 }, (_, i) => i + 1);
    expect(ix.findMatches(computeBlockHashes(prompt, BS, { eagle: true }))).toEqual([match(1, 3)]);
    // Plain windows of the same tokens are other blocks.
    expect(ix.findMatches(computeBlockHashes(prompt, BS))).toEqual([]);
    // An empty event carries no token at all.
    expect(ix.applyStored(1, 0, null, hashes(), new Uint32Array(0))).toBe(true);
    const copy = KvIndexer.restore(ix.snapshot());
    expect(copy.eagle).toBe(true);
    expect(copy.findMatches(computeBlockHashes(prompt, BS, { eagle: true }))).toEqual([match(1, 3)]);
    expect(() => new KvIndexer({ blockSize: BS, eagle: 'yes' as never })).toThrow(TypeError);
  });
});
