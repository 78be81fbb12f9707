// The warm-start snapshot container: what goes in comes out, and damaged or foreign bytes are
// refused with the reason (never a crash, never a half-read snapshot).
import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../../src/core/indexer.js';
import { computeBlockHashes } from '../../../src/core/hashing.js';
import { decodeWarmSnapshot, encodeWarmSnapshot, settingsMismatch, SnapshotRejected, type WarmSnapshot } from '../../../src/server/replicas/snapshot-format.js';

const settings = { model: 'm', blockSize: 4, mode: 'events', lowerTiers: true, maxBlocks: null };

function snapshot(): WarmSnapshot {
  const ix = new KvIndexer({ blockSize: 4 });
  const tokens = Uint32Array.from({ length: 8 }, (_, i) => i);
  ix.applyStored(3, 1, null, BigUint64Array.from([11n, 12n]), tokens);
  return {
    settings,
    createdAt: 1_700_000_000_000,
    replica: 'r1',
    pools: {
      prefill: { index: new KvIndexer({ blockSize: 4 }).snapshot(), streams: [] },
      decode: { index: ix.snapshot(), streams: [{ worker: 3, endpoints: ['tcp://a:1', 'tcp://a:2'], lastSeq: [null, 18446744073709551615n] }] },
    },
  };
}

describe('warm-start snapshot format', () => {
  it('round-trips the indexes, the stream positions (full 64-bit sequence numbers) and the settings', () => {
    const s = snapshot();
    const back = decodeWarmSnapshot(encodeWarmSnapshot(s));
    expect(back.settings).toEqual(settings);
    expect(back.createdAt).toBe(s.createdAt);
    expect(back.replica).toBe('r1');
    expect(back.pools.decode.streams).toEqual(s.pools.decode.streams);
    const ix = KvIndexer.restore(back.pools.decode.index);
    expect(
      ix.findMatches(
        computeBlockHashes(
          Uint32Array.from({ length: 8 }, (_, i) => i),
          4,
        ),
      ),
    ).toEqual([{ worker: 3, dpRank: 1, blocks: 2 }]);
  });

  it('refuses damaged, truncated, padded or foreign bytes with a SnapshotRejected', () => {
    const good = Buffer.from(encodeWarmSnapshot(snapshot()));
    const otherFormat = Buffer.from(good);
    otherFormat.writeUInt32LE(99, 8);
    const cases: Array<[Uint8Array, RegExp]> = [
      [new Uint8Array(0), /bad magic/],
      [Buffer.from('KVRTIDX\0 a bare index'), /bad magic/],
      [otherFormat, /format 99, this router reads format 1/],
      [good.subarray(0, 30), /truncated|unreadable/],
      [good.subarray(0, good.length - 1), /truncated/],
      [Buffer.concat([good, Buffer.from([0])]), /1 trailing bytes/],
    ];
    for (const [bytes, reason] of cases) {
      expect(() => decodeWarmSnapshot(bytes)).toThrow(SnapshotRejected);
      expect(() => decodeWarmSnapshot(bytes)).toThrow(reason);
    }
  });

  it('names every setting that differs', () => {
    expect(settingsMismatch(settings, settings)).toBeUndefined();
    expect(settingsMismatch({ ...settings, blockSize: 16, maxBlocks: 10 }, settings)).toBe(
      'taken with another configuration: blockSize 16 (here 4), maxBlocks 10 (here null)',
    );
  });
});
