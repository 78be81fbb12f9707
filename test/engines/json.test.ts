import { describe, expect, it } from 'vitest';
import { RawJson, engineBody, markVerbatim, stringifyBody, tokenIdsJson } from '../../src/engines/json.js';

describe('stringifyBody', () => {
  it('is JSON.stringify when no bigint is present', () => {
    const body = { a: 1, b: 'x', c: [1, 2], d: { e: null }, u: undefined };
    expect(stringifyBody(body)).toBe(JSON.stringify(body));
  });

  it('writes top-level bigints and bigint arrays as exact digits', () => {
    const max = (1n << 63n) - 1n;
    const text = stringifyBody({ prompt: [1, 2], bootstrap_room: max, rooms: [max, 5n], skip: undefined, s: 'q"' });
    expect(text).toBe('{"prompt":[1,2],"bootstrap_room":9223372036854775807,"rooms":[9223372036854775807,5],"s":"q\\""}');
    expect(text).toContain('9223372036854775807');
    // A double would have rounded it to 9223372036854775808.
    expect(String(Number(max))).not.toBe(max.toString());
  });

  it('still refuses a nested bigint (JSON.stringify TypeError)', () => {
    expect(() => stringifyBody({ room: 1n, nested: { x: 2n } })).toThrow(TypeError);
  });
});

describe('RawJson', () => {
  it('is written as is, from text or from bytes, beside bigints and plain values', () => {
    const body = { model: 'm', prompt: RawJson.ofBytes(new TextEncoder().encode('[1, 2,3]')), room: 7n, n: 1 };
    expect(stringifyBody(body)).toBe('{"model":"m","prompt":[1, 2,3],"room":7,"n":1}');
    expect(stringifyBody({ prompt: tokenIdsJson(Uint32Array.of(4, 4294967295)) })).toBe('{"prompt":[4,4294967295]}');
    expect(tokenIdsJson(Uint32Array.of(1, 2)).text).toBe(JSON.stringify([1, 2]));
  });

  it('writes token ids natively, last and in place, as bytes engines can be sent', () => {
    const body = { model: 'm\u00e9', prompt: tokenIdsJson(Uint32Array.of(7, 0, 4294967295)), room: 9n, n: 1 };
    expect(stringifyBody(body)).toBe('{"model":"m\u00e9","room":9,"n":1,"prompt":[7,0,4294967295]}');
    const bytes = engineBody(body);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(JSON.parse(Buffer.from(bytes as Uint8Array).toString('utf8'))).toEqual({ model: 'm\u00e9', room: 9, n: 1, prompt: [7, 0, 4294967295] });
    expect(stringifyBody({ prompt: tokenIdsJson(Uint32Array.of(1)) })).toBe('{"prompt":[1]}');
    // A second id array is written as text; the body stays valid JSON.
    expect(JSON.parse(stringifyBody({ a: tokenIdsJson(Uint32Array.of(1)), b: tokenIdsJson(Uint32Array.of(2, 3)) }))).toEqual({ a: [1], b: [2, 3] });
  });

  it('gives each body bytes of its own, small or large', () => {
    const ids = (n: number, v: number) => new Uint32Array(n).fill(v);
    const small = engineBody({ prompt: tokenIdsJson(ids(3, 1)) }) as Uint8Array;
    const large = engineBody({ prompt: tokenIdsJson(ids(20_000, 123_456)) }) as Uint8Array;
    const next = engineBody({ prompt: tokenIdsJson(ids(3, 2)) }) as Uint8Array;
    expect(Buffer.from(small).toString()).toBe('{"prompt":[1,1,1]}');
    expect(Buffer.from(next).toString()).toBe('{"prompt":[2,2,2]}');
    expect((JSON.parse(Buffer.from(large).toString()) as { prompt: number[] }).prompt).toEqual(Array.from(ids(20_000, 123_456)));
  });

  it('refuses to be nested, where it would serialise as {}', () => {
    expect(() => stringifyBody({ a: { prompt: RawJson.ofText('[1]') } })).toThrow(TypeError);
    expect(() => stringifyBody({ a: [RawJson.ofText('[1]')], room: 1n })).toThrow(TypeError);
  });
});

describe('engineBody', () => {
  it('is the JSON text of an unmarked body', () => {
    expect(engineBody({ a: 1, room: 2n })).toBe('{"a":1,"room":2}');
  });

  it('is the client bytes of a body marked verbatim, which is frozen and whose copies are unmarked', () => {
    const bytes = new TextEncoder().encode('{ "prompt": [1, 2],  "max_tokens": 4.0 }');
    const body = markVerbatim({ prompt: [1, 2], max_tokens: 4 }, bytes);
    expect(engineBody(body)).toBe(bytes);
    expect(Object.isFrozen(body)).toBe(true);
    expect(() => {
      (body as Record<string, unknown>).max_tokens = 1;
    }).toThrow(TypeError);
    expect(Object.keys(body)).toEqual(['prompt', 'max_tokens']);
    expect(JSON.stringify(body)).toBe('{"prompt":[1,2],"max_tokens":4}');
    const copy = { ...body, max_tokens: 1 };
    expect(engineBody(copy)).toBe('{"prompt":[1,2],"max_tokens":1}');
  });
});
