import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { BatchApplier, isDeviceMedium, type IndexerPort } from '../../src/events/apply.js';
import { newCounters } from '../../src/events/counters.js';
import type { DecodedBatch, KvCacheEvent, StoredEvent } from '../../src/events/decode.js';
import { range } from './helpers.js';

const BS = 4;
const batch = (events: KvCacheEvent[], extra: Partial<DecodedBatch> = {}): DecodedBatch => ({
  ts: 1,
  dpRank: 0,
  events,
  skippedUnknown: 0,
  skippedOtherGroup: 0,
  ...extra,
});
const stored = (tokens: Uint32Array, base: bigint, parent: bigint | null, extra: Partial<StoredEvent> = {}): StoredEvent => ({
  kind: 'stored',
  blockHashes: BigUint64Array.from({ length: tokens.length / BS }, (_, i) => base + BigInt(i)),
  parentHash: parent,
  tokenIds: tokens,
  blockSize: BS,
  loraName: null,
  medium: 'GPU',
  ...extra,
});

function setup() {
  const indexer = new KvIndexer({ blockSize: BS });
  const applier = new BatchApplier(indexer);
  const counters = newCounters();
  const held = (tokens: Uint32Array, opts?: Parameters<typeof computeBlockHashes>[2]) =>
    indexer.findMatches(computeBlockHashes(tokens, BS, opts)).find((m) => m.worker === 3 && m.dpRank === 1)?.blocks ?? 0;
  return { indexer, applier, counters, held };
}

describe('isDeviceMedium', () => {
  it('counts GPU, device (any case) and no medium as GPU, nothing else', () => {
    for (const m of [null, 'GPU', 'gpu', 'device', 'DEVICE']) expect(isDeviceMedium(m)).toBe(true);
    for (const m of ['CPU', 'cpu', 'DISK', 'LMCache', '']) expect(isDeviceMedium(m)).toBe(false);
  });
});

describe('BatchApplier', () => {
  it('applies stored, removed and cleared events for one (worker, dpRank)', () => {
    const { applier, counters, held } = setup();
    const t = range(0, 12);
    expect(applier.applyBatch(3, 1, batch([stored(t.subarray(0, 8), 10n, null), stored(t.subarray(8), 20n, 11n, { medium: null })]), counters)).toBe(2);
    expect(held(t)).toBe(3);
    applier.applyBatch(3, 1, batch([{ kind: 'removed', blockHashes: BigUint64Array.of(20n), medium: 'GPU' }]), counters);
    expect(held(t)).toBe(2);
    applier.applyBatch(3, 1, batch([{ kind: 'cleared' }]), counters);
    expect(held(t)).toBe(0);
    expect(counters).toMatchObject({ batches: 3, applied: 4, rejected: {} });
  });

  it('ignores and counts CPU and disk events (the GPU copy stays indexed)', () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    applier.applyBatch(3, 1, batch([stored(t, 10n, null)]), counters);
    applier.applyBatch(
      3,
      1,
      batch([
        stored(range(100, 104), 50n, null, { medium: 'CPU' }),
        { kind: 'removed', blockHashes: BigUint64Array.of(10n, 11n), medium: 'CPU' },
        { kind: 'removed', blockHashes: BigUint64Array.of(11n), medium: 'disk' },
      ]),
      counters,
    );
    expect(held(t)).toBe(2);
    expect(held(range(100, 104))).toBe(0);
    expect(counters.ignoredMedium).toBe(3);
    expect(counters.applied).toBe(1);
  });

  it('rejects a block size other than the index one, and a token count that does not fit', () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    applier.applyBatch(3, 1, batch([stored(t, 10n, null, { blockSize: 2, blockHashes: BigUint64Array.of(1n, 2n, 3n, 4n) })]), counters);
    applier.applyBatch(3, 1, batch([stored(t, 10n, null, { blockHashes: BigUint64Array.of(1n) })]), counters);
    expect(held(t)).toBe(0);
    expect(counters.rejected).toEqual({ blockSize: 1, tokenCount: 1 });
    expect(counters.applied).toBe(0);
  });

  it('attributes the index rejections by reason to the worker that caused them', () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    applier.applyBatch(3, 1, batch([stored(t, 10n, null)]), counters);
    const other = newCounters();
    applier.applyBatch(4, 0, batch([stored(range(50, 54), 99n, 12345n)]), other); // unknown parent
    applier.applyBatch(
      3,
      1,
      batch([
        stored(range(60, 64), 10n, null), // duplicate engine hash
        { kind: 'removed', blockHashes: BigUint64Array.of(11n, 777n, 778n), medium: null },
      ]),
      counters,
    );
    expect(other.rejected).toEqual({ unknownParent: 1 });
    expect(counters.rejected).toEqual({ duplicateHash: 1, unknownRemoval: 2 });
    expect(held(t)).toBe(1);
  });

  it('counts unknown event types and secondary-group events from the decoder', () => {
    const { applier, counters } = setup();
    applier.applyBatch(3, 1, batch([], { skippedUnknown: 2, skippedOtherGroup: 3 }), counters);
    expect(counters).toMatchObject({ batches: 1, unknownEventTypes: 2, otherGroupEvents: 3, applied: 0 });
  });

  it('hashes stored blocks with their LoRA name and multimodal digests', () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    const digest = 'ab'.repeat(32);
    applier.applyBatch(3, 1, batch([stored(t, 10n, null, { loraName: 'lora-a', mmExtraKeys: [null, [digest]] })]), counters);
    expect(held(t)).toBe(0);
    expect(held(t, { loraName: 'lora-a' })).toBe(1); // block 2 differs: it holds an image
    expect(held(t, { loraName: 'lora-a', mmHashes: [null, [digest]] })).toBe(2);
  });

  it('drops an event the index refuses with a RangeError, and goes on', () => {
    const calls: string[] = [];
    const port: IndexerPort = {
      blockSize: BS,
      applyStored: () => {
        throw new RangeError('no');
      },
      applyRemoved: () => {
        calls.push('removed');
        return 1;
      },
      applyCleared: () => void calls.push('cleared'),
      removeWorker: () => undefined,
      stats: () => ({ rejected: {} }),
    };
    const counters = newCounters();
    new BatchApplier(port).applyBatch(1, 0, batch([stored(range(0, 4), 1n, null), { kind: 'removed', blockHashes: BigUint64Array.of(1n), medium: null }, { kind: 'cleared' }]), counters);
    expect(counters.rejected).toEqual({ invalid: 1 });
    expect(counters.applied).toBe(2);
    expect(calls).toEqual(['removed', 'cleared']);
  });

  it('lets other failures of the index through (bugs are not data)', () => {
    const port: IndexerPort = {
      blockSize: BS,
      applyStored: () => {
        throw new Error('boom');
      },
      applyRemoved: () => 0,
      applyCleared: () => undefined,
      removeWorker: () => undefined,
      stats: () => ({ rejected: {} }),
    };
    expect(() => new BatchApplier(port).applyBatch(1, 0, batch([stored(range(0, 4), 1n, null)]), newCounters())).toThrow('boom');
  });
});
