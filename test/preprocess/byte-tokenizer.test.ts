import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteStreamDecoder, byteTokenizer } from '../../src/preprocess/byte-tokenizer.js';

describe('byteTokenizer', () => {
  it('maps text to its UTF-8 bytes and back', () => {
    expect(Array.from(byteTokenizer.encode('hé'))).toEqual([0x68, 0xc3, 0xa9]);
    expect(byteTokenizer.decode([0x68, 0xc3, 0xa9])).toBe('hé');
    expect(byteTokenizer.name).toBe('byte');
  });

  it('round-trips any string', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => byteTokenizer.decode(byteTokenizer.encode(s)) === s));
  });

  it('decodes invalid UTF-8 to U+FFFD rather than throwing', () => {
    expect(byteTokenizer.decode([0xc3])).toBe('\ufffd');
  });

  it('refuses ids outside the byte range and non-strings', () => {
    expect(() => byteTokenizer.decode([256])).toThrow(RangeError);
    expect(() => byteTokenizer.decode([1.5])).toThrow(/\[0, 255\]/);
    expect(() => byteTokenizer.encode(42 as never)).toThrow(TypeError);
    expect(() => byteTokenizer.decode(null as never)).toThrow(TypeError);
  });
});

describe('ByteStreamDecoder', () => {
  it('holds back a split multi-byte character until it is complete', () => {
    const d = new ByteStreamDecoder();
    const ids = byteTokenizer.encode('a€b');
    const pieces = Array.from(ids, (id) => d.push([id]));
    expect(pieces).toEqual(['a', '', '', '€', 'b']);
    expect(d.end()).toBe('');
  });

  it('concatenates to the whole decode for any split', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.array(fc.nat(), { maxLength: 5 }), (s, cuts) => {
        const ids = byteTokenizer.encode(s);
        const points = [...new Set(cuts.map((c) => c % (ids.length + 1)))].sort((a, b) => a - b);
        const d = new ByteStreamDecoder();
        let out = '';
        let prev = 0;
        for (const p of [...points, ids.length]) {
          out += d.push(ids.subarray(prev, p));
          prev = p;
        }
        return out + d.end() === s;
      }),
    );
  });
});
