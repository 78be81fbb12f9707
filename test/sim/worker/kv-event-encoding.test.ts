import { Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { KvEventBatchEncoder, type EncodableKvEvent } from '../../../src/sim/worker/kv-event-encoding.js';

// The byte examples of PROTOCOLS.md section 2, copied verbatim: hex bytes and "quoted" strings
// (a quoted string stands for its UTF-8 bytes).
const MAP_EXAMPLE = `93 cb41da305498100000 91 8a a4"type" ab"BlockStored" ac"block_hashes" 91 cfdeadbeef12345678
b1"parent_block_hash" c0 a9"token_ids" 94 01020304 aa"block_size" 04 a7"lora_id" c0 a6"medium"
a3"GPU" a9"lora_name" c0 a9"group_idx" 00 b2"kv_cache_spec_kind" ae"full_attention" 00`;
const ARRAY_EXAMPLE = `93 cb41da305498100000 91 97 ab"BlockStored" 91 cfdeadbeef12345678 c0
94 01020304 04 c0 a3"GPU" 00`;

function exampleBytes(notation: string): Buffer {
  const parts: Buffer[] = [];
  for (const m of notation.matchAll(/"([^"]*)"|([0-9a-f]+)/g)) {
    parts.push(m[1] !== undefined ? Buffer.from(m[1], 'utf8') : Buffer.from(m[2], 'hex'));
  }
  return Buffer.concat(parts);
}

const TS = Buffer.from('41da305498100000', 'hex').readDoubleBE(0);
const stored: EncodableKvEvent = {
  type: 'BlockStored',
  blockHashes: [0xdeadbeef12345678n],
  parentBlockHash: null,
  tokenIds: [1, 2, 3, 4],
  blockSize: 4,
  loraName: null,
  medium: 'GPU',
};
const unpackr = new Unpackr({ useRecords: false, int64AsType: 'bigint', mapsAsObjects: true });

describe('KvEventBatchEncoder', () => {
  it('reproduces the map-encoded example of PROTOCOLS.md byte for byte', () => {
    const bytes = new KvEventBatchEncoder('map').encode(TS, [stored], 0);
    expect(bytes.toString('hex')).toBe(exampleBytes(MAP_EXAMPLE).toString('hex'));
  });

  it('reproduces the positional example of PROTOCOLS.md byte for byte', () => {
    const bytes = new KvEventBatchEncoder('array').encode(TS, [stored], 0);
    expect(bytes.toString('hex')).toBe(exampleBytes(ARRAY_EXAMPLE).toString('hex'));
  });

  it('keeps 64-bit hashes exact and writes small ones compactly, as msgspec does', () => {
    const hashes = [0n, 127n, 255n, 65_535n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n];
    const bytes = new KvEventBatchEncoder('array').encode(1.5, [{ type: 'BlockRemoved', blockHashes: hashes, medium: 'GPU' }], 3);
    // Every value >= 2^32 is uint64 (cf), never msgpackr's signed int64 (d3).
    expect(bytes.includes(0xd3)).toBe(false);
    const [ts, events, dp] = unpackr.unpack(bytes) as [number, unknown[][], number];
    expect(ts).toBe(1.5);
    expect(dp).toBe(3);
    expect(events[0][0]).toBe('BlockRemoved');
    expect((events[0][1] as unknown[]).map((h) => BigInt(h as number | bigint))).toEqual(hashes);
    expect(events[0][2]).toBe('GPU');
  });

  it('writes an integral timestamp as float64 all the same', () => {
    const bytes = new KvEventBatchEncoder('map').encode(1_750_000_000, [], 0);
    expect(bytes.subarray(0, 2).toString('hex')).toBe('93cb');
    expect(bytes.readDoubleBE(2)).toBe(1_750_000_000);
  });

  it('encodes removals, clears, parents and LoRA names in both encodings', () => {
    const events: EncodableKvEvent[] = [
      { ...stored, blockHashes: [11n, 12n], parentBlockHash: 10n, tokenIds: [1, 2, 3, 4, 5, 6, 7, 8], loraName: 'my-lora' },
      { type: 'BlockRemoved', blockHashes: [12n], medium: 'GPU' },
      { type: 'AllBlocksCleared' },
    ];
    const asMap = unpackr.unpack(new KvEventBatchEncoder('map').encode(2, events, 0)) as [number, Record<string, unknown>[], number];
    expect(asMap[1]).toEqual([
      {
        type: 'BlockStored',
        block_hashes: [11, 12],
        parent_block_hash: 10,
        token_ids: [1, 2, 3, 4, 5, 6, 7, 8],
        block_size: 4,
        lora_id: 1,
        medium: 'GPU',
        lora_name: 'my-lora',
        group_idx: 0,
        kv_cache_spec_kind: 'full_attention',
      },
      { type: 'BlockRemoved', block_hashes: [12], medium: 'GPU', group_idx: 0 },
      { type: 'AllBlocksCleared' },
    ]);
    const asArray = unpackr.unpack(new KvEventBatchEncoder('array').encode(2, events, 0)) as [number, unknown[], number];
    expect(asArray[1]).toEqual([
      ['BlockStored', [11, 12], 10, [1, 2, 3, 4, 5, 6, 7, 8], 4, 1, 'GPU', 'my-lora'],
      ['BlockRemoved', [12], 'GPU'],
      ['AllBlocksCleared'],
    ]);
  });

  it('numbers LoRA adapters from 1 in first-seen order', () => {
    const enc = new KvEventBatchEncoder('array');
    const ids = ['a', 'b', 'a'].map((loraName) => {
      const [, events] = unpackr.unpack(enc.encode(0.5, [{ ...stored, loraName }], 0)) as [number, unknown[][]];
      return events[0][5];
    });
    expect(ids).toEqual([1, 2, 1]);
  });

  it('refuses an unknown encoding and malformed events', () => {
    expect(() => new KvEventBatchEncoder('json' as never)).toThrow(RangeError);
    expect(() => new KvEventBatchEncoder('map').encode(0, [{ type: 'Bogus' } as never], 0)).toThrow(TypeError);
    expect(() => new KvEventBatchEncoder('map').encode(0, [{ ...stored, blockHashes: [2n ** 64n] }], 0)).toThrow(RangeError);
    expect(() => new KvEventBatchEncoder('map').encode(0, [{ ...stored, tokenIds: [-1] }], 0)).toThrow(RangeError);
  });
});
