import fc from 'fast-check';
import { Unpackr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { Float64, MsgpackWriter } from '../../../src/sim/worker/msgpack-writer.js';

const unpackr = new Unpackr({ useRecords: false, int64AsType: 'bigint', mapsAsObjects: true });
const hex = (v: Parameters<MsgpackWriter['write']>[0]) => new MsgpackWriter(1).write(v).finish().toString('hex');

describe('MsgpackWriter', () => {
  it('writes integers in their smallest form, non-negative ones unsigned (msgspec style)', () => {
    expect(hex(5)).toBe('05');
    expect(hex(200)).toBe('ccc8');
    expect(hex(65_535)).toBe('cdffff');
    expect(hex(2 ** 32 - 1)).toBe('ceffffffff');
    expect(hex(2n ** 32n)).toBe('cf0000000100000000');
    expect(hex(2n ** 63n - 1n)).toBe('cf7fffffffffffffff');
    expect(hex(-1)).toBe('ff');
    expect(hex(-33)).toBe('d0df');
    expect(hex(-40_000)).toBe('d2ffff63c0');
    expect(hex(-(2n ** 63n))).toBe('d38000000000000000');
    expect(() => hex(2n ** 64n)).toThrow(RangeError);
  });

  it('writes floats as float64, also integral ones wrapped in Float64', () => {
    expect(hex(0.5)).toBe('cb3fe0000000000000');
    expect(hex(new Float64(1))).toBe('cb3ff0000000000000');
  });

  it('uses the smallest string, array and map headers', () => {
    expect(hex('a'.repeat(31)).slice(0, 2)).toBe('bf');
    expect(hex('a'.repeat(32)).slice(0, 4)).toBe('d920');
    expect(hex('a'.repeat(256)).slice(0, 6)).toBe('da0100');
    expect(hex(new Array(15).fill(null)).slice(0, 2)).toBe('9f');
    expect(hex(new Array(16).fill(null)).slice(0, 6)).toBe('dc0010');
    expect(
      new MsgpackWriter()
        .writeMap([
          ['b', 1],
          ['a', true],
        ])
        .finish()
        .toString('hex'),
    ).toBe('82a16201a161c3');
  });

  it('round-trips through msgpackr for arbitrary nested values', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.string(),
        fc.double({ noNaN: true, noInteger: true }),
      ),
      node: fc.oneof(
        { depthSize: 'small' },
        tie('leaf'),
        fc.array(tie('node'), { maxLength: 20 }),
        fc.dictionary(
          fc.string().filter((k) => k !== '__proto__'),
          tie('node'),
          { maxKeys: 5 },
        ),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const decoded = unpackr.unpack(new MsgpackWriter(1).write(v as never).finish());
        expect(normalise(decoded)).toEqual(normalise(v));
      }),
    );
  });
});

// msgpackr returns small integers as numbers and large ones as bigint: compare as bigint.
function normalise(v: unknown): unknown {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalise(x)]));
  return v;
}
