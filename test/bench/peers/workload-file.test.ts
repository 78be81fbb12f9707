import { describe, expect, it } from 'vitest';
import { decodeWorkload, encodeWorkload, type PeerWorkload } from '../../../bench/peers/workload-file.js';

function workload(blockSize = 4): PeerWorkload {
  return {
    blockSize,
    stored: [
      {
        worker: 3,
        dpRank: 0,
        parent: null,
        hashes: BigUint64Array.of(1n, 2n),
        localHashes: BigUint64Array.of(0xffff_ffff_ffff_ffffn, 7n),
        tokens: Uint32Array.from({ length: 2 * blockSize }, (_, i) => i * 1000),
      },
      {
        worker: 0xffff_ffff,
        dpRank: 2,
        parent: 2n ** 63n,
        hashes: BigUint64Array.of(3n),
        localHashes: BigUint64Array.of(9n),
        tokens: Uint32Array.from({ length: blockSize }, () => 0xffff_ffff),
      },
    ],
    removed: [{ worker: 3, dpRank: 0, hashes: BigUint64Array.of(2n, 1n) }],
    queries: [
      { localHashes: BigUint64Array.of(0xffff_ffff_ffff_ffffn), tokens: Uint32Array.from({ length: blockSize }, (_, i) => i) },
      { localHashes: new BigUint64Array(0), tokens: new Uint32Array(0) },
    ],
  };
}

describe('the peer workload file', () => {
  it('reads back exactly what was written, 64-bit hashes and u32 extremes included', () => {
    const w = workload();
    expect(decodeWorkload(encodeWorkload(w))).toEqual(w);
  });

  it('round-trips an odd block size, whose tokens leave the next section unaligned', () => {
    const w = workload(3);
    expect(decodeWorkload(encodeWorkload(w))).toEqual(w);
  });

  it('lays the header out as the Rust reader expects', () => {
    const bytes = encodeWorkload(workload());
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    expect(Buffer.from(bytes.subarray(0, 8)).toString('latin1')).toBe('KVRPEERW');
    expect([8, 12, 16, 20, 24, 28].map((at) => view.getUint32(at, true))).toEqual([1, 4, 2, 1, 2, 0]);
    // The first stored event: worker 3, dp rank 0, 2 blocks, no parent, parent slot 0.
    expect([32, 36, 40, 44].map((at) => view.getUint32(at, true))).toEqual([3, 0, 2, 0]);
    expect(view.getBigUint64(48, true)).toBe(0n);
    expect(view.getBigUint64(56, true)).toBe(1n);
  });

  it('refuses events and queries that do not fit the layout, naming them', () => {
    const w = workload();
    w.stored[1].localHashes = BigUint64Array.of(1n, 2n);
    expect(() => encodeWorkload(w)).toThrow(/stored event 1: 1 block hashes but 2 local hashes/);
    const v = workload();
    v.queries[0].tokens = new Uint32Array(3);
    expect(() => encodeWorkload(v)).toThrow(/query 0: 1 blocks of 4 tokens need 4 tokens, got 3/);
    expect(() => encodeWorkload({ ...workload(), blockSize: 0 })).toThrow(RangeError);
    const u = workload();
    u.removed[0].worker = -1;
    expect(() => encodeWorkload(u)).toThrow(/removed event 0: worker must be a u32/);
  });

  it('refuses damaged files: magic, version, truncation, trailing bytes', () => {
    const bytes = encodeWorkload(workload());
    const damaged = (f: (b: Uint8Array) => Uint8Array) => () => decodeWorkload(f(Uint8Array.from(bytes)));
    expect(damaged((b) => ((b[0] = 0), b))).toThrow(/magic/);
    expect(damaged((b) => ((b[8] = 9), b))).toThrow(/version 9/);
    expect(damaged((b) => b.subarray(0, b.length - 1))).toThrow(/truncated/);
    const longer = new Uint8Array(bytes.length + 8);
    longer.set(bytes);
    expect(() => decodeWorkload(longer)).toThrow(/8 bytes after the last query/);
  });
});
