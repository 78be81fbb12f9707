import { Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { measureApplyEventBatch, removedPayload, storedPayload } from '../../../bench/peers/event-batch.js';

const unpackr = new Unpackr({ int64AsType: 'bigint', useRecords: false });
const exact = (xs: unknown[]) => xs.map((x) => BigInt(x as bigint | number));

describe('KV event payloads for applyEventBatch', () => {
  it('encodes a BlockStored event as an engine batch [ts, [event], dp_rank], positional, hashes exact', () => {
    const tokens = Uint32Array.from({ length: 32 }, (_, i) => i);
    const payload = storedPayload({ worker: 3, parent: 2n ** 64n - 1n, hashes: BigUint64Array.of(2n ** 63n + 5n, 7n), tokens }, 1);
    const [ts, events, dpRank] = unpackr.unpack(payload) as [number, unknown[][], number];
    expect(typeof ts).toBe('number');
    expect(dpRank).toBe(1);
    const [type, hashes, parent, ids, blockSize, loraId, medium] = events[0];
    expect(type).toBe('BlockStored');
    expect(exact(hashes as unknown[])).toEqual([2n ** 63n + 5n, 7n]);
    expect(BigInt(parent as bigint)).toBe(2n ** 64n - 1n);
    expect(ids).toEqual(Array.from(tokens));
    expect([blockSize, loraId, medium]).toEqual([16, null, 'GPU']);
  });

  it('encodes a root block with a nil parent, and a BlockRemoved event', () => {
    const stored = unpackr.unpack(storedPayload({ worker: 0, parent: null, hashes: BigUint64Array.of(1n), tokens: new Uint32Array(16) })) as [number, unknown[][]];
    expect(stored[1][0][2]).toBeNull();
    const [, events] = unpackr.unpack(removedPayload({ worker: 0, hashes: BigUint64Array.of(9n, 8n) })) as [number, unknown[][]];
    expect(events[0][0]).toBe('BlockRemoved');
    expect(exact(events[0][1] as unknown[])).toEqual([9n, 8n]);
    expect(events[0][2]).toBe('GPU');
  });

  it('leaves the figures out, saying why, while the addon has no applyEventBatch', () => {
    const lines: string[] = [];
    expect(measureApplyEventBatch({ stored: [], removed: [] }, (l) => lines.push(l))).toEqual({ available: false });
    expect(lines).toEqual(['KvIndexer.applyEventBatch is not in this build: its figures are left out']);
  });
});
