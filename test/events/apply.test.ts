// BatchApplier: payload bytes in, the index updated by the native decoder (native/src/events),
// the typed result read into the worker's counters.
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { BatchApplier } from '../../src/events/apply.js';
import { newCounters } from '../../src/events/counters.js';
import { range } from './helpers.js';

const BS = 4;
const packr = new Packr({ useRecords: false, variableMapSize: true });
/** An array batch of positional events: [ts, events, dp_rank]. */
const payload = (events: unknown[], dpRank: number | null = 0) => packr.pack([1.5, events, dpRank]);
const hashes = (base: bigint, n: number) => Array.from({ length: n }, (_, i) => base + BigInt(i));
const stored = (tokens: Uint32Array, base: bigint, parent: bigint | null, medium: string | null = 'GPU', blockSize = BS) => [
  'BlockStored',
  hashes(base, tokens.length / BS),
  parent,
  [...tokens],
  blockSize,
  null,
  medium,
];
const removed = (list: bigint[], medium: string | null = null) => ['BlockRemoved', list, medium];

function setup(asyncFromBytes?: number) {
  const indexer = new KvIndexer({ blockSize: BS });
  const applier = new BatchApplier(indexer, asyncFromBytes);
  const counters = newCounters();
  const held = (tokens: Uint32Array, opts?: Parameters<typeof computeBlockHashes>[2]) =>
    indexer.findMatches(computeBlockHashes(tokens, BS, opts)).find((m) => m.worker === 3 && m.dpRank === 1)?.blocks ?? 0;
  return { indexer, applier, counters, held };
}

describe('BatchApplier', () => {
  it('applies stored, removed and cleared events for one (worker, dpRank), sync and on a thread alike', async () => {
    for (const asyncFrom of [Infinity, 0]) {
      const { applier, counters, held } = setup(asyncFrom);
      const t = range(0, 12);
      expect(await applier.applyPayload(3, 1, payload([stored(t.subarray(0, 8), 10n, null), stored(t.subarray(8), 20n, 11n, null)]), counters)).toBe(2);
      expect(held(t)).toBe(3);
      await applier.applyPayload(3, 1, payload([removed([20n], 'GPU')]), counters);
      expect(held(t)).toBe(2);
      await applier.applyPayload(3, 1, payload([['AllBlocksCleared']]), counters);
      expect(held(t)).toBe(0);
      expect(counters).toMatchObject({ batches: 3, applied: 4, rejected: {}, decodeErrors: 0 });
    }
  });

  it('hands large payloads to the threaded apply in place (a received message is its own)', async () => {
    const { indexer, applier, counters } = setup(0);
    const calls: unknown[] = [];
    const threaded = indexer.applyEventBatchAsync.bind(indexer);
    indexer.applyEventBatchAsync = (w, r, p, opts) => {
      calls.push(opts);
      return threaded(w, r, p, opts);
    };
    expect(await applier.applyPayload(3, 1, payload([['AllBlocksCleared']]), counters)).toBe(1);
    expect(calls).toEqual([{ inPlace: true }]);
  });

  it('indexes CPU and disk events as lower tiers, apart from the GPU copy; unknown media counted', async () => {
    const { indexer, applier, counters, held } = setup();
    const t = range(0, 8);
    await applier.applyPayload(3, 1, payload([stored(t, 10n, null)]), counters);
    // The second GPU block offloaded to the CPU (same engine hash), then dropped from the CPU.
    await applier.applyPayload(
      3,
      1,
      payload([stored(t.subarray(4), 11n, 10n, 'CPU'), removed([11n], 'CPU'), stored(range(100, 104), 50n, null, 'DISK'), removed([11n], 'LMCache')]),
      counters,
    );
    expect(held(t)).toBe(2);
    expect(held(range(100, 104))).toBe(0);
    expect(indexer.stats().lowerTierBlocks).toEqual({ host: 0, disk: 1, external: 0 });
    expect(counters.lowerTierEvents).toBe(3);
    expect(counters.applied).toBe(4);
    expect(counters.ignoredMedium).toBe(1);
    expect(counters.ignoredByMedium).toEqual({ LMCache: 1 });
    // Without lower tiers, CPU and disk events are counted per medium only.
    const plain = new BatchApplier(new KvIndexer({ blockSize: BS, lowerTiers: false }));
    const c2 = newCounters();
    await plain.applyPayload(3, 1, payload([stored(t, 10n, null, 'CPU'), removed([11n], 'disk')]), c2);
    expect(c2.ignoredByMedium).toEqual({ CPU: 1, disk: 1 });
    expect(c2.applied).toBe(0);
  });

  it('rejects a block size other than the index one, and a token count that does not fit', async () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    const wrongSize = stored(t, 10n, null, 'GPU', 2);
    const tooFew = ['BlockStored', [1n], null, [...t], BS];
    await applier.applyPayload(3, 1, payload([wrongSize, tooFew]), counters);
    expect(held(t)).toBe(0);
    expect(counters.rejected).toEqual({ blockSize: 1, tokenCount: 1 });
    expect(counters.applied).toBe(0);
  });

  it('counts the index rejections by reason for the worker that caused them', async () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    await applier.applyPayload(3, 1, payload([stored(t, 10n, null)]), counters);
    const other = newCounters();
    await applier.applyPayload(4, 0, payload([stored(range(50, 54), 99n, 12345n)]), other); // unknown parent
    await applier.applyPayload(3, 1, payload([stored(range(60, 64), 10n, null), removed([11n, 777n, 778n])]), counters); // duplicate hash
    expect(other.rejected).toEqual({ unknownParent: 1 });
    expect(counters.rejected).toEqual({ duplicateHash: 1, unknownRemoval: 2 });
    expect(held(t)).toBe(1);
  });

  it('counts unknown event types and secondary-group events', async () => {
    const { applier, counters } = setup();
    const otherGroup = ['BlockRemoved', [1n], null, 1];
    await applier.applyPayload(
      3,
      1,
      payload([
        ['Foo'],
        ['Bar', 1],
        otherGroup,
        new Map<string, unknown>([
          ['type', 'BlockRemoved'],
          ['block_hashes', [1n]],
          ['kv_cache_spec_kind', 'mamba'],
        ]),
      ]),
      counters,
    );
    expect(counters).toMatchObject({ batches: 1, unknownEventTypes: 2, otherGroupEvents: 2, applied: 0 });
  });

  it('hashes stored blocks with their LoRA name and multimodal digests', async () => {
    const { applier, counters, held } = setup();
    const t = range(0, 8);
    const digest = 'ab'.repeat(32);
    const event = new Map<string, unknown>([
      ['type', 'BlockStored'],
      ['block_hashes', [10n, 11n]],
      ['token_ids', [...t]],
      ['block_size', BS],
      ['lora_name', 'lora-a'],
      ['extra_keys', [null, [[digest, 0], 'salt']]],
    ]);
    await applier.applyPayload(3, 1, payload([event]), counters);
    expect(held(t)).toBe(0);
    expect(held(t, { loraName: 'lora-a' })).toBe(1); // block 2 differs: it holds an image
    expect(held(t, { loraName: 'lora-a', mmHashes: [null, [digest]] })).toBe(2);
  });

  it('refuses an event with fields of the wrong type alone, and a malformed payload whole', async () => {
    const { applier, counters, held } = setup();
    const badToken = ['BlockStored', [5n], null, [1, 2, 3, -4], BS];
    await applier.applyPayload(3, 1, payload([badToken, stored(range(0, 4), 10n, null)]), counters);
    expect(counters.rejected).toEqual({ invalid: 1 });
    expect(held(range(0, 4))).toBe(1);
    const n = await applier.applyPayload(3, 1, Buffer.concat([payload([['AllBlocksCleared']]), Buffer.of(0)]), counters);
    expect(n).toBe(0);
    expect(counters.decodeErrors).toBe(1);
    // The malformed batch (a trailing byte) applied nothing: its clear did not happen.
    expect(held(range(0, 4))).toBe(1);
  });
});

describe('native decoding against decodeEventBatch (TypeScript)', () => {
  it('both give the same index from random batches in both encodings', async () => {
    const { KvEventBatchEncoder } = await import('../../src/sim/worker/kv-event-encoding.js');
    const { decodeEventBatch } = await import('../../src/events/decode.js');
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) >>> 0) % n;
    for (const encoding of ['map', 'array'] as const) {
      const enc = new KvEventBatchEncoder(encoding);
      const viaNative = new KvIndexer({ blockSize: BS });
      const viaTs = new KvIndexer({ blockSize: BS });
      const known: bigint[] = [];
      for (let b = 0; b < 60; b++) {
        const events = Array.from({ length: 1 + rnd(4) }, () => {
          const kind = rnd(10);
          if (kind < 6) {
            const n = 1 + rnd(3);
            const blockHashes = Array.from({ length: n }, () => BigInt(1 + rnd(40)) << BigInt(rnd(2) * 40));
            const parent = known.length > 0 && rnd(2) ? known[rnd(known.length)] : null;
            known.push(...blockHashes);
            const tokenIds = Array.from({ length: n * BS }, () => rnd(3));
            return {
              type: 'BlockStored' as const,
              blockHashes,
              parentBlockHash: parent,
              tokenIds,
              blockSize: BS,
              loraName: rnd(5) === 0 ? 'l' : null,
              medium: rnd(6) === 0 ? 'CPU' : 'GPU',
            };
          }
          if (kind < 9) return { type: 'BlockRemoved' as const, blockHashes: [known[rnd(known.length + 1)] ?? 1n], medium: rnd(5) === 0 ? 'cpu' : 'GPU' };
          return { type: 'AllBlocksCleared' as const };
        });
        const bytes = enc.encode(b, events, 0);
        viaNative.applyEventBatch(1, 0, bytes);
        const decoded = decodeEventBatch(bytes);
        if (!decoded.ok) throw decoded.error;
        for (const e of decoded.batch.events) {
          const medium = e.kind === 'cleared' ? undefined : (e.medium ?? undefined);
          if (e.kind === 'stored') viaTs.applyStored(1, 0, e.parentHash, e.blockHashes, e.tokenIds, { loraName: e.loraName ?? undefined, medium });
          else if (e.kind === 'removed') viaTs.applyRemoved(1, 0, e.blockHashes, { medium });
          else if (e.kind === 'cleared') viaTs.applyCleared(1, 0);
        }
      }
      expect(viaNative.stats().eventsApplied).toBeGreaterThan(20);
      expect(viaNative.stats().eventsApplied).toBe(viaTs.stats().eventsApplied);
      expect(viaNative.stats().blocks).toBe(viaTs.stats().blocks);
      expect(viaNative.stats().rejected).toEqual(viaTs.stats().rejected);
      expect(viaNative.stats().lowerTierBlocks).toEqual(viaTs.stats().lowerTierBlocks);
      expect(viaNative.stats().lowerTierBlocks.host).toBeGreaterThan(0);
      for (let q = 0; q < 30; q++) {
        const tokens = Uint32Array.from({ length: 3 * BS }, () => rnd(3));
        for (const loraName of [undefined, 'l']) {
          const local = computeBlockHashes(tokens, BS, { loraName });
          expect(viaNative.findMatches(local)).toEqual(viaTs.findMatches(local));
        }
      }
    }
  });
});
