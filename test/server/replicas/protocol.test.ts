import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeBatch, decodeHeartbeat, encodeBatch, encodeHeartbeat, type BookingBatch } from '../../../src/server/replicas/protocol.js';

const batch: BookingBatch = {
  from: 'a',
  epoch: 'e1',
  sentAt: 1_700_000_000_000.25,
  seq: 3,
  reset: false,
  ask: true,
  events: [
    {
      kind: 'book',
      pool: 'decode',
      requestId: 'r1',
      worker: 7,
      dpRank: 1,
      promptTokens: 40,
      overlapBlocks: 2,
      expectedOutputTokens: 100,
      hashes: new Uint8Array(16).fill(9),
    },
    { kind: 'book', pool: 'prefill', requestId: 'r2', worker: 0, dpRank: 0, promptTokens: 3, overlapBlocks: 0, hashes: new Uint8Array(0) },
    { kind: 'prefill_done', pool: 'prefill', requestId: 'r2' },
    { kind: 'free', pool: 'decode', requestId: 'r1' },
  ],
};

describe('replica protocol', () => {
  it('round-trips a booking batch and a heartbeat', () => {
    expect(decodeBatch(encodeBatch(batch))).toEqual(batch);
    const hb = { from: 'b', epoch: 'e2', sentAt: 5, bookings: 12 };
    expect(decodeHeartbeat(encodeHeartbeat(hb))).toEqual(hb);
  });

  it('refuses whole any message that is not of the protocol, without throwing', () => {
    const good = { v: 1, from: 'a', epoch: 'e', sentAt: 1, seq: 0, reset: false, ask: false, events: [] as unknown[] };
    const bad: unknown[] = [
      new Uint8Array([0xc1]),
      pack('text'),
      pack([1, 2]),
      pack(Object.assign({}, good, { v: 2 })),
      pack(Object.assign({}, good, { from: '' })),
      pack(Object.assign({}, good, { seq: -1 })),
      pack(Object.assign({}, good, { events: [[9, 0, 'r']] })),
      pack(Object.assign({}, good, { events: [[2, 5, 'r']] })),
      pack(Object.assign({}, good, { events: [[0, 1, 'r', 1, 0, 10, 0, null, new Uint8Array(7)]] })),
      pack(Object.assign({}, good, { events: [[0, 1, 'r', -1, 0, 10, 0, null, new Uint8Array(8)]] })),
      pack(Object.assign({}, good, { events: [[0, 1, 'r', 1, 0, 10, 0, 'many', new Uint8Array(8)]] })),
      pack(Object.assign({}, good, { events: [[2, 1, 'ok'], 'junk'] })),
    ];
    for (const b of bad) expect(decodeBatch(b as Uint8Array)).toBeNull();
    expect(decodeBatch(pack(good))).not.toBeNull();
    expect(decodeHeartbeat(pack({ v: 1, from: 'a', epoch: 'e', sentAt: 1 }))).toBeNull();
  });
});
