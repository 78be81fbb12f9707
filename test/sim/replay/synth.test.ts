import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PromptSynthesizer, synthesizePrompt, writeBlockTokens } from '../../../src/sim/replay/synth.js';

/** The token stream as first written: uint32 arithmetic in doubles (the replays' fixtures were made with it). */
function referenceTokens(hashId: number, seed: number, count: number): number[] {
  const mix = (x: number) => {
    x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
    x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
    return (x ^ (x >>> 16)) >>> 0;
  };
  let state = mix(mix((hashId >>> 0) ^ mix(seed)) ^ Math.floor(hashId / 0x1_0000_0000));
  const out: number[] = [];
  for (let j = 0; j < count; j++) {
    state = (state + 0x9e3779b9) >>> 0;
    out.push(mix(state) % 32_000);
  }
  return out;
}

describe('synthesized prompts', () => {
  it('give every hash id the same tokens as the reference stream, below the vocabulary size', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.nat(), fc.integer({ min: 1, max: 512 }), (id, seed, count) => {
        const out = new Uint32Array(count + 2);
        writeBlockTokens(id, seed, out, 1, count);
        expect([...out.subarray(1, count + 1)]).toEqual(referenceTokens(id, seed, count));
        expect([out[0], out[count + 1]]).toEqual([0, 0]);
      }),
      { numRuns: 300 },
    );
  });

  it('build a prompt from its hash ids, the last block cut to the input length', () => {
    const p = synthesizePrompt({ timestamp: 0, inputLength: 600, outputLength: 1, hashIds: [3, 9] }, 5);
    expect(p).toHaveLength(600);
    expect([...p.subarray(0, 512)]).toEqual(referenceTokens(3, 5, 512));
    expect([...p.subarray(512)]).toEqual(referenceTokens(9, 5, 88));
  });
});

describe('PromptSynthesizer', () => {
  it("gives a trace's prompts exactly the reference stream's tokens (written by the addon), blocks cut to the input length", () => {
    const req = (hashIds: number[], inputLength: number) => ({ timestamp: 0, inputLength, outputLength: 1, hashIds });
    // Shared prefixes, a block cut short in one request and whole in another, ids past the input length, ids past 2^32.
    const trace = [req([1, 2, 3], 1100), req([1, 2], 700), req([1, 4, 9], 512), req([5, 2, 1], 1536), req([1], 1), req([2 ** 40 + 3, 2 ** 53 - 1], 700)];
    const synth = new PromptSynthesizer(42, 512);
    for (const r of trace) {
      const expected: number[] = [];
      for (const id of r.hashIds) expected.push(...referenceTokens(id, 42, Math.min(512, r.inputLength - expected.length)));
      expect([...synth.prompt(r)]).toEqual(expected);
    }
  });

  it('matches writeBlockTokens for any hash ids, seed and block size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.maxSafeNat(), { maxLength: 5 }),
        fc.nat(),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 400 }),
        (ids, seed, blockTokens, inputLength) => {
          const tokens = new PromptSynthesizer(seed, blockTokens).prompt({ timestamp: 0, inputLength, outputLength: 1, hashIds: ids });
          const expected = new Uint32Array(inputLength);
          ids.forEach((id, k) => {
            if (k * blockTokens < inputLength) writeBlockTokens(id, seed, expected, k * blockTokens, Math.min(blockTokens, inputLength - k * blockTokens));
          });
          expect(tokens).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses hash ids that are not non-negative safe integers', () => {
    const synth = new PromptSynthesizer(0, 512);
    for (const bad of [-1, 1.5, 2 ** 53, Number.NaN]) {
      expect(() => synth.prompt({ timestamp: 0, inputLength: 10, outputLength: 1, hashIds: [bad] })).toThrow(RangeError);
    }
  });

  it('writes a recycled prompt buffer over completely: prompts equal those of fresh buffers, tokens past the hash ids zero', () => {
    const req = (hashIds: number[], inputLength: number) => ({ timestamp: 0, inputLength, outputLength: 1, hashIds });
    // The second request's hash ids cover 600 of its 1000 tokens; the first leaves other tokens in the buffer they share.
    const trace = [req([1, 2, 8, 9], 1000), req([3, 4], 1000), req([5], 900), req([6, 7], 1024)];
    const fresh = new PromptSynthesizer(7, 300);
    const expected = trace.map((r) => [...fresh.prompt(r)]);
    expect(expected[1].slice(600).every((t) => t === 0)).toBe(true);
    const recycling = new PromptSynthesizer(7, 300);
    let previous: Uint32Array | undefined;
    trace.forEach((r, i) => {
      const tokens = recycling.prompt(r);
      if (previous) expect(tokens.buffer).toBe(previous.buffer); // one buffer of 1024 tokens serves them all
      expect(tokens.length).toBe(r.inputLength);
      expect([...tokens]).toEqual(expected[i]);
      recycling.recycle(tokens);
      previous = tokens;
    });
  });

  it('recycles only buffers of its own prompts', () => {
    const trace = [{ timestamp: 0, inputLength: 100, outputLength: 1, hashIds: [1] }];
    const synth = new PromptSynthesizer(0, 512);
    const foreign = new Uint32Array(100);
    synth.recycle(foreign);
    expect(synth.prompt(trace[0]).buffer).not.toBe(foreign.buffer);
  });
});
