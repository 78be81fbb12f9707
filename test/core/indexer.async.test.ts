// The indexer's calls that work off the JavaScript thread: event batches, snapshot, restore.
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { NativeErrorCode, nativeErrorCode } from '../../src/core/errors.js';
import { KvEventBatchEncoder } from '../../src/sim/worker/kv-event-encoding.js';
import { BS, localOf, match, tokensOf } from './indexer-fixtures.js';

const encoder = new KvEventBatchEncoder('array');

/** One batch of `n` chained stored events of one block each, for worker w. */
function chain(n: number, base: number) {
  const events = Array.from({ length: n }, (_, i) => ({
    type: 'BlockStored' as const,
    blockHashes: [BigInt(base + i)],
    parentBlockHash: i === 0 ? null : BigInt(base + i - 1),
    tokenIds: [...tokensOf([i])],
    blockSize: BS,
    loraName: null,
    medium: 'GPU',
  }));
  return encoder.encode(0, events, 0);
}

describe('KvIndexer off-thread calls', () => {
  it('applyEventBatchAsync applies like applyEventBatch', async () => {
    const a = new KvIndexer({ blockSize: BS });
    const b = new KvIndexer({ blockSize: BS });
    const payload = chain(50, 1000);
    const sync = a.applyEventBatch(1, 0, payload);
    const async = await b.applyEventBatchAsync(1, 0, payload);
    expect(async).toEqual(sync);
    expect(sync).toMatchObject({ events: 50, stored: 50, cancelled: false });
    expect(b.findMatches(localOf([0, 1, 2]))).toEqual([match(1, 3)]);
    // Bad bytes never throw: the result says so.
    const bad = await b.applyEventBatchAsync(1, 0, Buffer.from('c1', 'hex'));
    expect(bad.decodeError?.message).toMatch(/invalid msgpack/);
    expect(() => a.applyEventBatch(1, 0, 'x' as never)).toThrow(TypeError);
    expect(() => a.applyEventBatch(1.5, 0, payload)).toThrow(RangeError);
    expect(() => new KvIndexer({ blockSize: BS, mode: 'approximate' }).applyEventBatch(1, 0, payload)).toThrow(/'events' mode/);
  });

  it('applyEventBatch (counts written into an array) reports exactly what the async call does', async () => {
    const packr = new Packr({ useRecords: false, variableMapSize: true });
    const tokens = [...tokensOf([0, 1])];
    const stored = (h: number, medium: string | null, parent: number | null = null) => [
      'BlockStored',
      [BigInt(h), BigInt(h + 1)],
      parent === null ? null : BigInt(parent),
      tokens,
      BS,
      null,
      medium,
    ];
    const payloads = [
      chain(5, 1),
      // Lower tiers, an unknown medium, a refusal, an event of the wrong types, a dp rank.
      packr.pack([2.5, [stored(10, 'CPU'), stored(20, 'nvme-x'), stored(30, 'GPU', 999), ['BlockStored', 'x'], ['BlockRemoved', [77n], 'disk'], ['Nope']], 3]),
      packr.pack([1, [stored(40, null)], null]),
      Buffer.from('c1', 'hex'),
      new Uint8Array(0),
    ];
    for (const payload of payloads) {
      const a = new KvIndexer({ blockSize: BS });
      const b = new KvIndexer({ blockSize: BS });
      const sync = a.applyEventBatch(2, 1, payload);
      const async = await b.applyEventBatchAsync(2, 1, payload);
      expect(sync).toStrictEqual(async);
      expect(Object.keys(sync)).toEqual(Object.keys(async));
      expect(a.stats()).toEqual(b.stats());
    }
    const mixed = new KvIndexer({ blockSize: BS }).applyEventBatch(2, 1, payloads[1]);
    expect(mixed).toMatchObject({ events: 6, stored: 0, ts: 2.5, dpRank: 3, unknownTypes: 1, refused: { unknownParent: 1, invalid: 1 } });
    expect(mixed.lowerTiers).toEqual([
      { tier: 'host', stored: 1, removed: 0 },
      { tier: 'disk', stored: 0, removed: 1 },
    ]);
    expect(mixed.otherMedia).toEqual([{ medium: 'nvme-x', stored: 1, removed: 0 }]);
    expect(mixed.invalidEvent?.path).toMatch(/^events\[3\]/);
    // Results do not share their arrays.
    const ix = new KvIndexer({ blockSize: BS });
    const [r1, r2] = [ix.applyEventBatch(1, 0, chain(1, 500)), ix.applyEventBatch(1, 0, chain(1, 600))];
    expect(r1.lowerTiers).not.toBe(r2.lowerTiers);
    expect(r1.refused).not.toBe(r2.refused);
  });

  it('applyEventBatchAsync copies the payload unless told to read it in place', async () => {
    const payload = chain(2_000, 1);
    const whole = new KvIndexer({ blockSize: BS }).applyEventBatch(1, 0, payload);
    const ix = new KvIndexer({ blockSize: BS });
    const pending = ix.applyEventBatchAsync(1, 0, payload);
    payload.fill(0xc1); // the caller's bytes change at once: the copy applies as it was
    expect(await pending).toEqual(whole);
    const again = chain(10, 50_000);
    expect((await ix.applyEventBatchAsync(2, 0, again, { inPlace: true })).stored).toBe(10);
    expect(() => ix.applyEventBatchAsync(1, 0, again, { inPlace: 1 as never })).toThrow(TypeError);
    expect(() => ix.applyEventBatchAsync(1, 0, again, 'x' as never)).toThrow(TypeError);
  });

  it('a worker removed while its batch applies gets nothing more applied', async () => {
    const ix = new KvIndexer({ blockSize: BS });
    const pending = ix.applyEventBatchAsync(7, 0, chain(20_000, 1));
    ix.removeWorker(7);
    const r = await pending;
    expect(r.cancelled || r.stored === 20_000).toBe(true);
    if (r.cancelled) expect(ix.blocksOf(7, 0)).toBe(0);
    // Batches started after the removal apply normally.
    expect((await ix.applyEventBatchAsync(7, 0, chain(3, 1))).stored).toBe(3);
    expect(ix.blocksOf(7, 0)).toBe(3);
  });

  it('snapshotAsync and restoreAsync round-trip, consistent while the index changes', async () => {
    const ix = new KvIndexer({ blockSize: BS });
    ix.applyEventBatch(1, 0, chain(100, 1));
    const pending = ix.snapshotAsync();
    ix.applyEventBatch(2, 0, chain(5, 9_000)); // after the copy, or before it: never half
    const bytes = await pending;
    expect(bytes).toBeInstanceOf(Uint8Array);
    const copy = await KvIndexer.restoreAsync(bytes);
    expect(copy.blocksOf(1, 0)).toBe(100);
    expect([0, 5]).toContain(copy.blocksOf(2, 0));
    expect(copy.findMatches(localOf([0, 1, 2, 3]))).toEqual(KvIndexer.restore(bytes).findMatches(localOf([0, 1, 2, 3])));
    const damaged = bytes.slice();
    damaged[30] ^= 1;
    const err = await KvIndexer.restoreAsync(damaged).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/KvIndexer.restore: corrupt snapshot/);
    expect(nativeErrorCode(err)).toBe(NativeErrorCode.invalidSnapshot);
    await expect(KvIndexer.restoreAsync([1] as never)).rejects.toThrow(TypeError);
  });
});
