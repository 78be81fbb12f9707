import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DecodeError, decodeEventBatch, foldDigest, type DecodedBatch, type StoredEvent } from '../../src/events/decode.js';
import { KvEventBatchEncoder } from '../../src/sim/worker/kv-event-encoding.js';
import { ARRAY_EXAMPLE, EXAMPLE_TS, MAP_EXAMPLE, msgpackBytes, s } from './fixtures.js';

// The two payloads of PROTOCOLS.md section 2 as plain hex (the same bytes as the notation in
// fixtures.ts, which the first test checks).
const MAP_EXAMPLE_HEX =
  '93cb41da305498100000918aa474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657391cfdeadbeef12345678' +
  'b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f6964739401020304aa626c6f636b5f73697a6504a76c6f72615f6964c0' +
  'a66d656469756da3475055a96c6f72615f6e616d65c0a967726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6e00';
const ARRAY_EXAMPLE_HEX = '93cb41da3054981000009197ab426c6f636b53746f72656491cfdeadbeef12345678c0940102030404c0a347505500';

function decodeOk(bytes: Uint8Array): DecodedBatch {
  const r = decodeEventBatch(bytes);
  if (!r.ok) throw new Error(`expected a batch, got ${r.error.message}`);
  return r.batch;
}

function decodeErr(bytes: Uint8Array): DecodeError {
  const r = decodeEventBatch(bytes);
  if (r.ok) throw new Error(`expected a DecodeError, got ${JSON.stringify(r.batch, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
  expect(r.error).toBeInstanceOf(DecodeError);
  return r.error;
}

const hex = (h: string) => Buffer.from(h, 'hex');
const batchOf = (events: string, count: number, dp = '00') => msgpackBytes(`93 cb3ff8000000000000 ${(0x90 | count).toString(16)} ${events} ${dp}`);
const storedEvent = (b: DecodedBatch, i = 0) => b.events[i] as StoredEvent;

const EXAMPLE_STORED: StoredEvent = {
  kind: 'stored',
  blockHashes: BigUint64Array.of(0xdeadbeef12345678n),
  parentHash: null,
  tokenIds: Uint32Array.of(1, 2, 3, 4),
  blockSize: 4,
  loraName: null,
  medium: 'GPU',
};

describe('decodeEventBatch: the PROTOCOLS.md examples', () => {
  it('uses the exact bytes of the document', () => {
    expect(msgpackBytes(MAP_EXAMPLE).toString('hex')).toBe(MAP_EXAMPLE_HEX);
    expect(msgpackBytes(ARRAY_EXAMPLE).toString('hex')).toBe(ARRAY_EXAMPLE_HEX);
  });

  it('decodes the map-encoded event inside an array batch', () => {
    const batch = decodeOk(hex(MAP_EXAMPLE_HEX));
    expect(batch).toEqual({ ts: EXAMPLE_TS, dpRank: 0, events: [EXAMPLE_STORED], skippedUnknown: 0, skippedOtherGroup: 0 });
    expect(batch.ts).toBe(1757500000.25);
  });

  it('decodes the positional batch to the same result', () => {
    expect(decodeOk(hex(ARRAY_EXAMPLE_HEX))).toEqual(decodeOk(hex(MAP_EXAMPLE_HEX)));
  });
});

describe('decodeEventBatch: batch encodings', () => {
  const event = `92 ${s('BlockRemoved')} 91 07`;

  it('accepts the 2-element batch of old SGLang (no dp rank)', () => {
    const batch = decodeOk(msgpackBytes(`92 cb3ff8000000000000 91 ${event}`));
    expect(batch.dpRank).toBeNull();
    expect(batch.ts).toBe(1.5);
    expect(batch.events).toEqual([{ kind: 'removed', blockHashes: BigUint64Array.of(7n), medium: null }]);
  });

  it('accepts a nil dp rank and ignores extra trailing batch elements', () => {
    expect(decodeOk(msgpackBytes(`93 cb3ff8000000000000 91 ${event} c0`)).dpRank).toBeNull();
    const batch = decodeOk(msgpackBytes(`95 cb3ff8000000000000 91 ${event} 05 ${s('future')} 81 01 02`));
    expect(batch.dpRank).toBe(5);
    expect(batch.events).toHaveLength(1);
  });

  it('accepts a map batch with data_parallel_rank', () => {
    const batch = decodeOk(msgpackBytes(`83 ${s('ts')} cb3ff8000000000000 ${s('events')} 91 ${event} ${s('data_parallel_rank')} 02`));
    expect(batch).toMatchObject({ ts: 1.5, dpRank: 2 });
    expect(batch.events).toHaveLength(1);
  });

  it('accepts the dp_rank alias in a map batch, and a map without any rank', () => {
    expect(decodeOk(msgpackBytes(`83 ${s('dp_rank')} 03 ${s('events')} 91 ${event} ${s('ts')} 01`)).dpRank).toBe(3);
    expect(decodeOk(msgpackBytes(`82 ${s('ts')} 01 ${s('events')} 90`)).dpRank).toBeNull();
  });

  it('ignores unknown keys in a map batch', () => {
    const batch = decodeOk(msgpackBytes(`84 ${s('ts')} 01 ${s('events')} 91 ${event} ${s('extra')} 92 c3 c2 ${s('dp_rank')} 01`));
    expect(batch.dpRank).toBe(1);
    expect(batch.events).toHaveLength(1);
  });

  it('accepts an integral or int64 timestamp', () => {
    expect(decodeOk(msgpackBytes(`93 ce68c1c0a0 90 00`)).ts).toBe(0x68c1c0a0);
    expect(decodeOk(msgpackBytes(`93 d30000000068c1c0a0 90 00`)).ts).toBe(0x68c1c0a0);
  });
});

describe('decodeEventBatch: event encodings', () => {
  it('reads a map event whose default-valued fields are absent', () => {
    const bytes = batchOf(`84 ${s('type')} ${s('BlockStored')} ${s('block_hashes')} 92 01 02 ${s('token_ids')} 94 01020304 ${s('block_size')} 02`, 1);
    expect(storedEvent(decodeOk(bytes))).toEqual({
      kind: 'stored',
      blockHashes: BigUint64Array.of(1n, 2n),
      parentHash: null,
      tokenIds: Uint32Array.of(1, 2, 3, 4),
      blockSize: 2,
      loraName: null,
      medium: null,
    });
  });

  it('reads a positional event cut after block_size (trailing defaults omitted)', () => {
    const bytes = batchOf(`95 ${s('BlockStored')} 91 09 cf8000000000000001 92 0506 02`, 1);
    expect(storedEvent(decodeOk(bytes))).toMatchObject({ blockHashes: BigUint64Array.of(9n), parentHash: 2n ** 63n + 1n, medium: null, loraName: null });
  });

  it('reads lora_name in both encodings, and treats an empty name as none', () => {
    const positional = batchOf(`98 ${s('BlockStored')} 91 01 c0 92 0506 02 01 ${s('GPU')} ${s('my-lora')}`, 1);
    const mapped = batchOf(
      `85 ${s('type')} ${s('BlockStored')} ${s('block_hashes')} 91 01 ${s('token_ids')} 92 0506 ${s('block_size')} 02 ${s('lora_name')} ${s('my-lora')}`,
      1,
    );
    expect(storedEvent(decodeOk(positional)).loraName).toBe('my-lora');
    expect(storedEvent(decodeOk(mapped)).loraName).toBe('my-lora');
    const empty = batchOf(`98 ${s('BlockStored')} 91 01 c0 92 0506 02 c0 c0 a0`, 1);
    expect(storedEvent(decodeOk(empty)).loraName).toBeNull();
  });

  it('reads BlockRemoved and AllBlocksCleared in both encodings', () => {
    const positional = batchOf(`93 ${s('BlockRemoved')} 92 01 02 ${s('CPU')} 91 ${s('AllBlocksCleared')}`, 2);
    const mapped = batchOf(
      `83 ${s('type')} ${s('BlockRemoved')} ${s('block_hashes')} 92 01 02 ${s('medium')} ${s('CPU')} 81 ${s('type')} ${s('AllBlocksCleared')}`,
      2,
    );
    const expected = [{ kind: 'removed', blockHashes: BigUint64Array.of(1n, 2n), medium: 'CPU' }, { kind: 'cleared' }];
    expect(decodeOk(positional).events).toEqual(expected);
    expect(decodeOk(mapped).events).toEqual(expected);
  });

  it('ignores unknown fields and extra trailing elements', () => {
    const positional = batchOf(`9e ${s('BlockStored')} 91 01 c0 92 0506 02 c0 ${s('GPU')} c0 c0 00 ${s('full_attention')} c0 ${s('later')} 81 01 02`, 1);
    const mapped = batchOf(
      `86 ${s('type')} ${s('BlockStored')} ${s('block_hashes')} 91 01 ${s('token_ids')} 92 0506 ${s('block_size')} 02 ${s('new_field')} 92 c3 ${s('x')} ${s('is_eagle')} c2`,
      1,
    );
    const removed = batchOf(`96 ${s('BlockRemoved')} 91 01 c0 00 ${s('full_attention')} ${s('extra')}`, 1);
    const cleared = batchOf(`93 ${s('AllBlocksCleared')} 01 02`, 1);
    expect(storedEvent(decodeOk(positional))).toMatchObject({ blockHashes: BigUint64Array.of(1n), tokenIds: Uint32Array.of(5, 6), medium: 'GPU' });
    expect(storedEvent(decodeOk(mapped))).toMatchObject({ blockHashes: BigUint64Array.of(1n), tokenIds: Uint32Array.of(5, 6), medium: null });
    expect(decodeOk(removed).events).toEqual([{ kind: 'removed', blockHashes: BigUint64Array.of(1n), medium: null }]);
    expect(decodeOk(cleared).events).toEqual([{ kind: 'cleared' }]);
  });

  it('skips and counts unknown event types', () => {
    const bytes = batchOf(`92 ${s('BlockUpdated')} 91 01 82 ${s('type')} ${s('Offloaded')} ${s('x')} 01 91 ${s('AllBlocksCleared')}`, 3);
    const batch = decodeOk(bytes);
    expect(batch.skippedUnknown).toBe(2);
    expect(batch.events).toEqual([{ kind: 'cleared' }]);
  });

  it('skips and counts events of a secondary KV cache group', () => {
    const group1 = batchOf(`9a ${s('BlockStored')} 91 01 c0 92 0506 02 c0 ${s('GPU')} c0 c0 01`, 1);
    const slidingMap = batchOf(
      `84 ${s('type')} ${s('BlockRemoved')} ${s('block_hashes')} 91 01 ${s('group_idx')} 00 ${s('kv_cache_spec_kind')} ${s('sliding_window')}`,
      1,
    );
    const mainGroup = batchOf(
      `85 ${s('type')} ${s('BlockRemoved')} ${s('block_hashes')} 91 01 ${s('group_idx')} 00 ${s('kv_cache_spec_kind')} ${s('mla_attention')} ${s('medium')} c0`,
      1,
    );
    expect(decodeOk(group1)).toMatchObject({ events: [], skippedOtherGroup: 1, skippedUnknown: 0 });
    expect(decodeOk(slidingMap)).toMatchObject({ events: [], skippedOtherGroup: 1 });
    expect(decodeOk(mainGroup)).toMatchObject({ events: [{ kind: 'removed' }], skippedOtherGroup: 0 });
  });

  it('takes multimodal digests (alone or with an offset) from extra_keys and ignores other keys', () => {
    const digest = 'ab'.repeat(32);
    const other = 'cd'.repeat(32);
    const extra = `93 c0 92 da0040"${digest}" ${s('salt')} 91 92 da0040"${other}" 03`;
    const bytes = batchOf(`99 ${s('BlockStored')} 93 01 02 03 c0 96 010203040506 02 c0 ${s('GPU')} c0 ${extra}`, 1);
    expect(storedEvent(decodeOk(bytes)).mmExtraKeys).toEqual([null, [digest], [other]]);
    const noMm = batchOf(`99 ${s('BlockStored')} 91 01 c0 92 0506 02 c0 ${s('GPU')} c0 91 91 ${s('lora-a')}`, 1);
    expect(storedEvent(decodeOk(noMm))).not.toHaveProperty('mmExtraKeys');
  });
});

describe('decodeEventBatch: hashes', () => {
  const removedWith = (hashes: string, count: number) => batchOf(`92 ${s('BlockRemoved')} ${(0x90 | count).toString(16)} ${hashes}`, 1);
  const hashesOf = (bytes: Uint8Array) => Array.from((decodeOk(bytes).events[0] as { blockHashes: BigUint64Array }).blockHashes);

  it('keeps uint64 hashes above 2^63 exact', () => {
    expect(hashesOf(removedWith('cfdeadbeef12345678 cfffffffffffffffff cf8000000000000000 cf0000000100000000', 4))).toEqual([
      0xdeadbeef12345678n,
      2n ** 64n - 1n,
      2n ** 63n,
      2n ** 32n,
    ]);
  });

  it('takes the same 64 bits of negative int64 hashes (SGLang) and of smaller signed ints', () => {
    expect(hashesOf(removedWith('d3fffffffffffffffe d38000000000000000 ff d0ff d1ff00 d2ffffff00', 6))).toEqual([
      2n ** 64n - 2n,
      2n ** 63n,
      2n ** 64n - 1n,
      2n ** 64n - 1n,
      2n ** 64n - 256n,
      2n ** 64n - 256n,
    ]);
    const stored = batchOf(`95 ${s('BlockStored')} 91 01 d3ffffffffffffffff 92 0506 02`, 1);
    expect(storedEvent(decodeOk(stored)).parentHash).toBe(2n ** 64n - 1n);
  });

  it('reads small unsigned encodings', () => {
    expect(hashesOf(removedWith('00 7f cc80 cdffff ceffffffff', 5))).toEqual([0n, 127n, 128n, 65535n, 2n ** 32n - 1n]);
  });

  it('folds bytes hashes to their last 8 bytes, big-endian', () => {
    const sha = '00112233445566778899aabbccddeeff' + '0123456789abcdef' + 'fedcba9876543210';
    expect(hashesOf(removedWith(`c420${sha} c408deadbeef12345678 c4030a0b0c`, 3))).toEqual([0xfedcba9876543210n, 0xdeadbeef12345678n, 0x0a0b0cn]);
    const stored = batchOf(`95 ${s('BlockStored')} 91 c40401020304 c420${sha} 92 0506 02`, 1);
    expect(storedEvent(decodeOk(stored))).toMatchObject({ blockHashes: BigUint64Array.of(0x01020304n), parentHash: 0xfedcba9876543210n });
    expect(foldDigest(Uint8Array.of())).toBe(0n);
  });

  it('refuses empty bytes, floats, strings and nil as hashes', () => {
    expect(decodeErr(removedWith('c400', 1)).path).toBe('events[0].block_hashes[0]');
    expect(decodeErr(removedWith('cb3ff8000000000000', 1)).message).toMatch(/hash/);
    expect(decodeErr(removedWith(s('abc'), 1)).message).toMatch(/integer or bytes/);
    expect(decodeErr(removedWith('c0', 1)).message).toMatch(/integer or bytes/);
  });
});

describe('decodeEventBatch: malformed payloads give a DecodeError, never a throw', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['empty payload', '', /empty/],
    ['truncated msgpack', ARRAY_EXAMPLE_HEX.slice(0, 40), /invalid msgpack/],
    ['trailing bytes after the batch', `${ARRAY_EXAMPLE_HEX}00`, /invalid msgpack/],
    ['reserved byte 0xc1', 'c1', /batch must be an array or a map/],
    ['a bare integer', '2a', /batch must be an array or a map/],
    ['a batch of one element', '91cb3ff8000000000000', /needs \[ts, events/],
    ['events not a list', `93 01 ${s('x')} 00`, /^events: must be a list/],
    ['ts not a number', `93 ${s('x')} 90 00`, /^ts:/],
    ['dp rank out of range', '93 01 90 ce00010000', /data_parallel_rank/],
    ['dp rank negative', '93 01 90 ff', /data_parallel_rank/],
    ['an event that is a number', '93 01 91 07 00', /tagged array or a map/],
    ['an event with a numeric tag', '93 01 91 9201 02 00', /type tag must be a string/],
    ['a map event without type', `93 01 91 81 ${s('block_hashes')} 90 00`, /type tag must be a string/],
    ['BlockStored without block_hashes', `93 01 91 81 ${s('type')} ${s('BlockStored')} 00`, /block_hashes: must be a list/],
    ['BlockStored without token_ids', `93 01 91 92 ${s('BlockStored')} 90 00`, /token_ids: must be a list/],
    ['a negative token id', `93 01 91 95 ${s('BlockStored')} 91 01 c0 91 ff 01 00`, /token_ids\[0\]/],
    ['a token id above u32', `93 01 91 95 ${s('BlockStored')} 91 01 c0 91 cf0000000100000000 01 00`, /token_ids\[0\]/],
    ['block_size zero', `93 01 91 95 ${s('BlockStored')} 91 01 c0 91 01 00 00`, /block_size/],
    ['block_size a string', `93 01 91 95 ${s('BlockStored')} 91 01 c0 91 01 ${s('16')} 00`, /block_size/],
    ['medium not a string', `93 01 91 97 ${s('BlockStored')} 91 01 c0 91 01 01 c0 07 00`, /medium/],
    ['extra_keys not a list', `93 01 91 99 ${s('BlockStored')} 91 01 c0 91 01 01 c0 c0 c0 07 00`, /extra_keys/],
    ['a timestamp extension as a hash', '93 01 91 92 ac"BlockRemoved" 91 d6ff00000001 00', /hash/],
    ['an unknown extension', '93 01 91 d40501 00', /invalid msgpack/],
  ];
  it.each(cases)('%s', (_name, notation, message) => {
    const error = decodeErr(msgpackBytes(notation));
    expect(error.message).toMatch(message);
    expect(error.code).toBe('kv_event_decode_error');
  });

  it('survives arbitrary bytes and mutations of real payloads', () => {
    const seed = hex(ARRAY_EXAMPLE_HEX);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(seed.length - 1), fc.nat(255), (random, at, byte) => {
        const mutated = Buffer.from(seed);
        mutated[at] = byte;
        for (const bytes of [random, mutated, mutated.subarray(0, at)]) {
          const r = decodeEventBatch(bytes);
          expect(typeof r.ok).toBe('boolean');
          if (!r.ok) expect(r.error).toBeInstanceOf(DecodeError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses a non-byte argument with a TypeError (a caller bug, not bad data)', () => {
    expect(() => decodeEventBatch('93' as unknown as Uint8Array)).toThrow(TypeError);
  });
});

describe('decodeEventBatch: what the simulated engine publishes', () => {
  it.each(['map', 'array'] as const)('round-trips %s-encoded batches', (encoding) => {
    const encoder = new KvEventBatchEncoder(encoding);
    const bytes = encoder.encode(
      12.5,
      [
        {
          type: 'BlockStored',
          blockHashes: [2n ** 64n - 5n, 17n],
          parentBlockHash: 3n,
          tokenIds: [1, 2, 3, 4],
          blockSize: 2,
          loraName: 'lora-x',
          medium: 'GPU',
        },
        { type: 'BlockRemoved', blockHashes: [17n], medium: 'GPU' },
        { type: 'AllBlocksCleared' },
      ],
      7,
    );
    expect(decodeOk(bytes)).toEqual({
      ts: 12.5,
      dpRank: 7,
      events: [
        {
          kind: 'stored',
          blockHashes: BigUint64Array.of(2n ** 64n - 5n, 17n),
          parentHash: 3n,
          tokenIds: Uint32Array.of(1, 2, 3, 4),
          blockSize: 2,
          loraName: 'lora-x',
          medium: 'GPU',
        },
        { kind: 'removed', blockHashes: BigUint64Array.of(17n), medium: 'GPU' },
        { kind: 'cleared' },
      ],
      skippedUnknown: 0,
      skippedOtherGroup: 0,
    });
  });
});
