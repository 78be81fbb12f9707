import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { jsonWithTokenIds, scanTokenPrompt, tokenIdsJsonText } from '../../src/core/prompt-scan.js';

const enc = (s: string) => new TextEncoder().encode(s);

describe('scanTokenPrompt', () => {
  it('reads the ids and the span of the prompt array', () => {
    const body = enc('{"model":"m","prompt":[1,2,4294967295]}');
    const r = scanTokenPrompt(body)!;
    expect(Array.from(r.tokens)).toEqual([1, 2, 4294967295]);
    expect(new TextDecoder().decode(body.subarray(r.start, r.end))).toBe('[1,2,4294967295]');
  });

  it('reads a body that is a view into a larger buffer (a pooled Buffer)', () => {
    const big = Buffer.from('xxxx{"prompt":[3,4]}yyyy');
    const r = scanTokenPrompt(big.subarray(4, big.length - 4))!;
    expect(Array.from(r.tokens)).toEqual([3, 4]);
    expect([r.start, r.end]).toEqual([10, 15]);
  });

  it('handles prompts far larger than its kept scratch, and results stay independent', () => {
    const ids = Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 100_000);
    const a = scanTokenPrompt(enc(JSON.stringify({ prompt: ids })))!;
    const b = scanTokenPrompt(enc('{"prompt":[5]}'))!;
    expect(a.tokens.length).toBe(ids.length);
    expect(Array.from(a.tokens.subarray(0, 5))).toEqual(ids.slice(0, 5));
    expect(a.tokens[199_999]).toBe(ids[199_999]);
    expect(Array.from(b.tokens)).toEqual([5]);
  });

  it('is undefined for bodies it leaves to JSON.parse', () => {
    for (const text of ['', 'null', '{"prompt":"text"}', '{"prompt":[]}', '{"prompt":[1.5]}', '{"prompt":[1]', '{"a":1}']) {
      expect(scanTokenPrompt(enc(text)), text).toBeUndefined();
    }
  });

  it('refuses a body that is not bytes', () => {
    expect(() => scanTokenPrompt('{"prompt":[1]}' as unknown as Uint8Array)).toThrow(TypeError);
  });
});

describe('tokenIdsJsonText', () => {
  it('writes what JSON.stringify writes for the ids', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 300 }), (ids) => {
        expect(tokenIdsJsonText(Uint32Array.from(ids))).toBe(JSON.stringify(ids));
      }),
      { numRuns: 300 },
    );
  });

  it('writes prompts larger than its kept scratch', () => {
    const ids = Uint32Array.from({ length: 300_000 }, (_, i) => 0xffffffff - i);
    expect(tokenIdsJsonText(ids)).toBe(JSON.stringify(Array.from(ids)));
  });

  it('refuses ids that are not a Uint32Array', () => {
    expect(() => tokenIdsJsonText([1, 2] as unknown as Uint32Array)).toThrow(TypeError);
  });
});

describe('jsonWithTokenIds', () => {
  it('keeps every body intact while later ones fill new slabs, and writes large bodies whole', () => {
    // 1k-token bodies (several per body slab) and 8k-token ones (a buffer of their own), all kept.
    const bodies = Array.from({ length: 60 }, (_, i) => {
      const ids = Uint32Array.from({ length: i % 7 === 6 ? 8192 : 1024 }, (_, j) => (i * 7919 + j * 104729) % 151_643);
      return { ids, bytes: jsonWithTokenIds(`{"model":"m${i}","max_tokens":4`, '"prompt"', ids) };
    });
    for (const [i, { ids, bytes }] of bodies.entries()) {
      expect(JSON.parse(Buffer.from(bytes).toString('utf8'))).toEqual({ model: `m${i}`, max_tokens: 4, prompt: Array.from(ids) });
    }
  });
});
