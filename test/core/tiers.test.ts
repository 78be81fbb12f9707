// Lower tiers end to end through the library: KvIndexer's direct API with a medium, and the
// RoutingCore's partial credit for blocks a worker can reload (kv) or their reload time (ttft).
import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore } from '../../src/core/routing-core.js';
import { DEFAULT_TTFT_MODEL } from '../../src/core/ttft-model.js';
import { DEFAULT_TIER_CREDIT, perTierArray, perTierObject, resolveTierCredit } from '../../src/core/tiers.js';

const BS = 4;
const range = (first: number, n: number) => Uint32Array.from({ length: n }, (_, i) => first + i);
const engine = (base: number, n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(base + i));

describe('resolveTierCredit', () => {
  it("defaults to Dynamo's weights, takes any part, and names a bad field", () => {
    expect(resolveTierCredit(undefined, 'c')).toEqual({ host: 0.75, disk: 0.25, external: 0.25 });
    expect(resolveTierCredit({ disk: 0 }, 'c')).toEqual({ host: 0.75, disk: 0, external: 0.25 });
    expect(() => resolveTierCredit({ host: -1 }, 'c')).toThrow(new RangeError('c.host must be a finite number >= 0, got -1'));
    expect(() => resolveTierCredit({ host: '1' }, 'c')).toThrow(TypeError);
    expect(() => resolveTierCredit({ gpu: 1 }, 'c')).toThrow(/c has an unknown field 'gpu'/);
    expect(() => resolveTierCredit(3, 'c')).toThrow(TypeError);
    expect(perTierObject(perTierArray(DEFAULT_TIER_CREDIT))).toEqual(DEFAULT_TIER_CREDIT);
  });
});

describe('KvIndexer lower tiers', () => {
  it('keeps a tier per medium apart from the device view', () => {
    const indexer = new KvIndexer({ blockSize: BS });
    expect(indexer.lowerTiers).toBe(true);
    const t = range(0, 8);
    expect(indexer.applyStored(1, 0, null, engine(10, 2), t)).toBe(true);
    // Block 11 copied to host memory under its engine hash, block 12 (its child) on disk.
    expect(indexer.applyStored(1, 0, 10n, engine(11, 1), t.subarray(4), { medium: 'cpu_pinned' })).toBe(true);
    expect(indexer.applyStored(1, 0, 11n, engine(12, 1), range(8, 4), { medium: 'CPU_TIER2' })).toBe(true);
    expect(indexer.stats().lowerTierBlocks).toEqual({ host: 1, disk: 1, external: 0 });
    expect(indexer.stats().blocks).toBe(2);
    // Removing from the host leaves the GPU's copy.
    expect(indexer.applyRemoved(1, 0, engine(11, 1), { medium: 'CPU' })).toBe(1);
    expect(indexer.findMatches(computeBlockHashes(t, BS))).toEqual([{ worker: 1, dpRank: 0, blocks: 2 }]);
    // And the GPU's removal leaves the disk's.
    expect(indexer.applyRemoved(1, 0, engine(10, 2))).toBe(2);
    expect(indexer.stats().lowerTierBlocks).toEqual({ host: 0, disk: 1, external: 0 });
    indexer.applyCleared(1, 0);
    expect(indexer.stats().lowerTierBlocks).toEqual({ host: 0, disk: 0, external: 0 });
  });

  it('refuses unknown media, lower tiers it does not keep, and lowerTiers outside events mode', () => {
    const indexer = new KvIndexer({ blockSize: BS });
    expect(() => indexer.applyStored(1, 0, null, engine(10, 1), range(0, 4), { medium: 'TAPE' })).toThrow(
      expect.objectContaining({ name: 'RangeError', message: "unknown medium 'TAPE'", code: 'ERR_KVROUTE_OUT_OF_RANGE' }),
    );
    expect(() => indexer.applyRemoved(1, 0, engine(10, 1), { medium: 7 as unknown as string })).toThrow(TypeError);
    const plain = new KvIndexer({ blockSize: BS, lowerTiers: false });
    expect(plain.lowerTiers).toBe(false);
    expect(() => plain.applyStored(1, 0, null, engine(10, 1), range(0, 4), { medium: 'DISK' })).toThrow(
      /does not keep lower tiers \(medium 'DISK' is on the disk tier\)/,
    );
    expect(plain.applyStored(1, 0, null, engine(10, 1), range(0, 4), { medium: 'GPU' })).toBe(true);
    expect(() => new KvIndexer({ blockSize: BS, mode: 'approximate', lowerTiers: true })).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, lowerTiers: 'yes' as unknown as boolean })).toThrow(TypeError);
    expect(new KvIndexer({ blockSize: BS, mode: 'approximate' }).lowerTiers).toBe(false);
  });
});

describe('RoutingCore tier credit', () => {
  function fleet(config: ConstructorParameters<typeof RoutingCore>[1]) {
    const indexer = new KvIndexer({ blockSize: BS });
    const core = new RoutingCore(indexer, config);
    core.setWorkers([
      { worker: 0, kvCapacityBlocks: 100 },
      { worker: 1, kvCapacityBlocks: 100 },
    ]);
    const t = range(0, 32); // 8 blocks
    // Worker 0: the first 4 blocks on the GPU. Worker 1: all 8 on the given medium.
    indexer.applyStored(0, 0, null, engine(100, 4), t.subarray(0, 16));
    return { core, indexer, t };
  }

  it('credits host blocks at 0.75 and disk blocks at 0.25 in kv, and books them as cached', () => {
    for (const [medium, winner] of [
      ['CPU', 1],
      ['DISK', 0],
    ] as const) {
      const { core, indexer, t } = fleet({ blockSize: BS, seed: 1 });
      indexer.applyStored(1, 0, null, engine(200, 8), t, { medium });
      const d = core.query(t);
      expect(d.worker).toBe(winner);
      const one = d.candidates.find((c) => c.worker === 1)!;
      const tier = medium === 'CPU' ? 'host' : 'disk';
      expect(one.lowerTierBlocks).toEqual({ host: 0, disk: 0, external: 0, [tier]: 8 });
      // 8 prefill blocks less the credit, plus 8 new decode blocks.
      expect(one.cost).toBe(8 - 8 * DEFAULT_TIER_CREDIT[tier] + 8);
    }
    const { core, indexer, t } = fleet({ blockSize: BS, seed: 1 });
    indexer.applyStored(1, 0, null, engine(200, 8), t, { medium: 'CPU' });
    const d = core.route(t, { requestId: 'a' });
    expect(d).toMatchObject({ worker: 1, overlapBlocks: 0, lowerTierBlocks: { host: 8, disk: 0, external: 0 }, cachedTokens: 32, prefillTokens: 0 });
  });

  it('takes the credit from the config, checked', () => {
    const { core, indexer, t } = fleet({ blockSize: BS, seed: 1, tierCredit: { host: 0 } });
    indexer.applyStored(1, 0, null, engine(200, 8), t, { medium: 'CPU' });
    expect(core.query(t).worker).toBe(0);
    expect(core.config.tierCredit).toEqual({ host: 0, disk: 0.25, external: 0.25 });
    expect(() => new RoutingCore(indexer, { blockSize: BS, tierCredit: { disk: Number.NaN } })).toThrow(/config.tierCredit.disk must be a finite number/);
  });

  it('ttft prices a reload below a recompute and above a device hit', () => {
    const { core, indexer, t } = fleet({ blockSize: BS, seed: 1, policy: 'ttft' });
    indexer.applyStored(1, 0, null, engine(200, 8), t, { medium: 'CPU' });
    const d = core.query(t);
    const cost = (w: number) => d.candidates.find((c) => c.worker === w)!.cost;
    expect(d.policy).toBe('ttft');
    expect(cost(0)).toBeGreaterThan(0);
    expect(cost(1)).toBeGreaterThan(0);
    // Worker 0 computes 16 tokens; worker 1 reloads 32 over PCIe and computes its last token,
    // which is faster at the default model's figures. Each score is the predicted TTFT plus the
    // prefill the rank spends on the request (what later requests there wait for).
    const m = DEFAULT_TTFT_MODEL;
    const step = (n: number) => m.prefill.a * n * n + m.prefill.b * n + m.prefill.c;
    expect(cost(0)).toBeCloseTo(step(16) + step(16), 9);
    expect(cost(1)).toBeCloseTo(step(1) + 32 * m.reloadMsPerToken.host + step(1), 9);
    expect(d.worker).toBe(1);
    // The decision carries the chosen worker's predicted TTFT (the score without the work term).
    expect(d.predictedTtftMs).toBeCloseTo(step(1) + 32 * m.reloadMsPerToken.host, 9);
    expect(fleet({ blockSize: BS, seed: 1, policy: 'kv' }).core.query(t).predictedTtftMs).toBeUndefined();
    // On disk the reload is slower than computing.
    indexer.applyCleared(1, 0);
    indexer.applyStored(1, 0, null, engine(200, 8), t, { medium: 'DISK' });
    expect(core.query(t).worker).toBe(0);
  });
});
