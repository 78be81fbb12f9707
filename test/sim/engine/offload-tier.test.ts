// The CPU offload tier through the model's public API: GPU evictions move blocks to the CPU (events
// with medium CPU, chained to their parents, before the GPU's removals), a prefix found there is
// reloaded at the configured bandwidth instead of recomputed, the CPU pool evicts its own oldest
// blocks, and a reset drops it.
import { describe, expect, it } from 'vitest';
import { prefillMs, reloadMs, type KvEvent } from '../../../src/sim/engine/index.js';
import { model, outputsOf, prompt, removedHashes, runToIdle, storedHashes } from './helpers.js';

type TierEvent = Exclude<KvEvent, { type: 'AllBlocksCleared' }>;
const cpu = (events: readonly KvEvent[]) => events.filter((e): e is TierEvent => e.type !== 'AllBlocksCleared' && e.medium === 'CPU');
const gpu = (events: readonly KvEvent[]) => events.filter((e): e is TierEvent => e.type !== 'AllBlocksCleared' && e.medium === 'GPU');

/** An 8-block GPU (32 tokens of 4): request `a` fills 4 blocks, then `b`'s 31 tokens push them out. */
function evictA(offloadBlocks: number) {
  const m = model({ kvBlocks: 8, offloadBlocks });
  m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 1 }, 0);
  const first = runToIdle(m);
  const aHashes = storedHashes(first.events);
  m.submit({ id: 'b', promptTokens: prompt(31, 500), maxTokens: 1 }, first.endMs);
  const second = runToIdle(m, first.endMs);
  return { m, first, second, aHashes };
}

describe('offload to the CPU tier', () => {
  it('moves evicted GPU blocks to the CPU: one self-describing BlockStored for the chain, head first, then the GPU removal', () => {
    const { m, second, aHashes } = evictA(16);
    expect(aHashes).toHaveLength(4);
    const step = second.steps.find((s) => s.events.some((e) => e.type === 'BlockRemoved'))!;
    const removedAt = step.events.findIndex((e) => e.type === 'BlockRemoved');
    const offloaded = step.events.slice(0, removedAt).filter((e) => e.type === 'BlockStored' && e.medium === 'CPU');
    // The GPU evicts a's blocks tail first; the CPU announces them as the chain they are, with their tokens.
    expect(offloaded).toEqual([
      {
        type: 'BlockStored',
        blockHashes: BigUint64Array.from(aHashes),
        parentBlockHash: null,
        tokenIds: prompt(16),
        blockSize: 4,
        loraName: null,
        medium: 'CPU',
      },
    ]);
    expect(step.events[removedAt]).toEqual({
      type: 'BlockRemoved',
      blockHashes: BigUint64Array.from([aHashes[3], aHashes[2], aHashes[1], aHashes[0]]),
      medium: 'GPU',
    });
    expect(m.offloadedBlockHashes()).toEqual(new Set(aHashes));
    expect(m.metrics()).toMatchObject({ offloadedBlocks: 4, offloadStores: 4, offloadEvictions: 0, evictions: 4 });
  });

  it("names a chain's parent when the GPU evicts only its tail (the head stays on the GPU)", () => {
    const m = model({ kvBlocks: 8, offloadBlocks: 16 });
    m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 1 }, 0);
    const first = runToIdle(m);
    const aHashes = storedHashes(first.events);
    // 20 tokens: 5 blocks, 4 free; one of a's blocks is evicted, the least recently freed: its tail.
    m.submit({ id: 'b', promptTokens: prompt(20, 500), maxTokens: 1 }, first.endMs);
    const offloaded = cpu(runToIdle(m, first.endMs).events);
    expect(offloaded).toEqual([
      {
        type: 'BlockStored',
        blockHashes: BigUint64Array.of(aHashes[3]),
        parentBlockHash: aHashes[2],
        tokenIds: prompt(16).slice(12),
        blockSize: 4,
        loraName: null,
        medium: 'CPU',
      },
    ]);
  });

  it('reloads a prefix found on the CPU instead of computing it, charging the transfer at the configured bandwidth', () => {
    const { m, second, aHashes } = evictA(16);
    const t0 = second.endMs;
    m.submit({ id: 'a2', promptTokens: prompt(16), maxTokens: 1 }, t0);
    const third = runToIdle(m, t0);
    // The first 3 blocks are on the CPU (the last block holds the last token, which is computed).
    const [out] = outputsOf(third, 'a2');
    expect(out.cachedTokens).toBe(12);
    expect(m.metrics()).toMatchObject({ reloadedTokens: 12, cachedTokens: 12 });
    expect(third.endMs - t0).toBeCloseTo(reloadMs(m.config, 12) + prefillMs(m.config, 4), 9);
    // Back on the GPU: the reloaded blocks are stored again there, and their CPU copies stay.
    expect(storedHashes(gpu(third.events))).toEqual(aHashes);
    for (const h of aHashes.slice(0, 3)) expect(m.offloadedBlockHashes().has(h)).toBe(true);
    expect(cpu(third.events).filter((e) => e.type === 'BlockRemoved')).toEqual([]);
  });

  it('charges the reload from offloadBandwidthBytesPerS and the model KV bytes per token', () => {
    const slow = { kvBlocks: 8, offloadBlocks: 16, offloadBandwidthBytesPerS: 1e9, kvTransfer: { bytesPerToken: 1e6, bandwidthBytesPerS: 1e12 } };
    const m = model(slow);
    expect(reloadMs(m.config, 12)).toBeCloseTo(12, 12); // 1 ms per token
    m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 1 }, 0);
    const t1 = runToIdle(m).endMs;
    m.submit({ id: 'b', promptTokens: prompt(31, 500), maxTokens: 1 }, t1);
    const t2 = runToIdle(m, t1).endMs;
    m.submit({ id: 'a2', promptTokens: prompt(16), maxTokens: 1 }, t2);
    const r = runToIdle(m, t2);
    expect(r.endMs - t2).toBeCloseTo(12 + prefillMs(m.config, 4), 6);
    // Nothing is computed while the blocks arrive: the steps before the prefill are idle waits.
    expect(r.steps.slice(0, -1).every((s) => s.outputs.length === 0)).toBe(true);
  });

  it('evicts the CPU pool oldest first when it is full, with a BlockRemoved for the CPU medium', () => {
    const { m, second, aHashes } = evictA(2);
    const seq = cpu(second.events).map(
      (e) => `${e.type === 'BlockStored' ? 'stored' : 'removed'} ${[...e.blockHashes].map((h) => aHashes.indexOf(h)).join(',')}`,
    );
    // A pool of 2: the chain goes in two runs of 2; the second pushes the first out, its tail first.
    expect(seq).toEqual(['stored 2,3', 'removed 3,2', 'stored 0,1']);
    expect(m.offloadedBlockHashes()).toEqual(new Set([aHashes[1], aHashes[0]]));
    expect(m.metrics()).toMatchObject({ offloadedBlocks: 2, offloadStores: 4, offloadEvictions: 2 });
  });

  it('refreshes the CPU copy of a block evicted from the GPU again instead of storing it twice', () => {
    const { m, second } = evictA(16);
    m.submit({ id: 'a2', promptTokens: prompt(16), maxTokens: 1 }, second.endMs);
    const third = runToIdle(m, second.endMs);
    const storesBefore = m.metrics().offloadStores;
    // b again pushes a's blocks out of the GPU: they are on the CPU already.
    m.submit({ id: 'b2', promptTokens: prompt(31, 900), maxTokens: 1 }, third.endMs);
    const fourth = runToIdle(m, third.endMs);
    const again = storedHashes(cpu(fourth.events));
    const aOnCpu = storedHashes(gpu(third.events)).filter((h) => m.offloadedBlockHashes().has(h));
    expect(aOnCpu.length).toBeGreaterThan(0);
    for (const h of aOnCpu) expect(again).not.toContain(h);
    expect(m.metrics().offloadStores - storesBefore).toBe(again.length);
  });

  it('reset drops the CPU tier too: one AllBlocksCleared, and no later reload', () => {
    const { m, second } = evictA(16);
    expect(m.reset()).toEqual([{ type: 'AllBlocksCleared' }]);
    expect(m.offloadedBlockHashes().size).toBe(0);
    m.submit({ id: 'a2', promptTokens: prompt(16), maxTokens: 1 }, second.endMs);
    const r = runToIdle(m, second.endMs);
    expect(outputsOf(r, 'a2')[0].cachedTokens).toBe(0);
    expect(m.metrics().reloadedTokens).toBe(0);
  });

  it('is off by default: evictions only remove, and nothing is reloaded', () => {
    const { m, second, aHashes } = evictA(0);
    expect(cpu(second.events)).toEqual([]);
    expect(removedHashes(second.events)).toEqual([aHashes[3], aHashes[2], aHashes[1], aHashes[0]]);
    m.submit({ id: 'a2', promptTokens: prompt(16), maxTokens: 1 }, second.endMs);
    expect(outputsOf(runToIdle(m, second.endMs), 'a2')[0].cachedTokens).toBe(0);
    expect(m.metrics()).toMatchObject({ offloadedBlocks: 0, offloadStores: 0, reloadedTokens: 0 });
  });
});
