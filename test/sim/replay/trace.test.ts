import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hitRateBound } from '../../../src/sim/replay/bound.js';
import { synthesizePrompt } from '../../../src/sim/replay/synth.js';
import { loadTrace, parseTrace, TraceFormatError } from '../../../src/sim/replay/trace.js';

const line = (o: object) => JSON.stringify(o);
const traces = fileURLToPath(new URL('../../../traces/', import.meta.url));

describe('parseTrace', () => {
  it('reads Mooncake lines and sorts by arrival', () => {
    const trace = parseTrace(
      [
        line({ timestamp: 5, input_length: 600, output_length: 3, hash_ids: [1, 2] }),
        '',
        line({ timestamp: 1, input_length: 512, output_length: 1, hash_ids: [7] }),
      ].join('\n'),
    );
    expect(trace.map((r) => r.timestamp)).toEqual([1, 5]);
    expect(trace[1]).toEqual({ timestamp: 5, inputLength: 600, outputLength: 3, hashIds: [1, 2] });
  });

  it('names the line of every malformed request', () => {
    const ok = line({ timestamp: 0, input_length: 10, output_length: 1, hash_ids: [1] });
    expect(() => parseTrace(`${ok}\n{oops`)).toThrow(/line 2: not valid JSON/);
    expect(() => parseTrace(line({ timestamp: -1, input_length: 10, output_length: 1, hash_ids: [1] }))).toThrow(TraceFormatError);
    expect(() => parseTrace(line({ timestamp: 0, input_length: 0, output_length: 1, hash_ids: [] }))).toThrow(/input_length/);
    expect(() => parseTrace(line({ timestamp: 0, input_length: 10, output_length: 1, hash_ids: [1, 2] }))).toThrow(/needs ceil/);
    expect(() => parseTrace(line({ timestamp: 0, input_length: 10, output_length: 1, hash_ids: ['a'] }))).toThrow(/hash_ids\[0\]/);
    expect(() => parseTrace('\n\n')).toThrow(/no requests/);
  });
});

describe('synthesizePrompt', () => {
  it('gives equal ids equal tokens and cuts the last block', () => {
    const a = synthesizePrompt({ timestamp: 0, inputLength: 1000, outputLength: 1, hashIds: [3, 4] });
    const b = synthesizePrompt({ timestamp: 0, inputLength: 600, outputLength: 1, hashIds: [3, 9] });
    expect(a).toHaveLength(1000);
    expect(b).toHaveLength(600);
    expect(a.subarray(0, 512)).toEqual(b.subarray(0, 512));
    expect(a.subarray(512, 600)).not.toEqual(b.subarray(512, 600));
  });

  it('is deterministic per seed', () => {
    const r = { timestamp: 0, inputLength: 512, outputLength: 1, hashIds: [42] };
    expect(synthesizePrompt(r, 1)).toEqual(synthesizePrompt(r, 1));
    expect(synthesizePrompt(r, 1)).not.toEqual(synthesizePrompt(r, 2));
  });
});

describe('hitRateBound', () => {
  it('counts only leading blocks seen before', () => {
    const mk = (hashIds: number[]) => ({ timestamp: 0, inputLength: hashIds.length * 512, outputLength: 1, hashIds });
    // second request: 1 hit then a miss breaks the prefix (its later "1" is not a prefix hit)
    expect(hitRateBound([mk([1, 2]), mk([1, 3, 2])], 'blocks')).toBeCloseTo(1 / 5);
  });

  it('weighs a partial last block by its tokens in the token unit', () => {
    const a = { timestamp: 0, inputLength: 600, outputLength: 1, hashIds: [1, 2] };
    // Second request: block 1 (512 tokens) and block 2 (88 tokens) both hit.
    expect(hitRateBound([a, a], 'tokens')).toBeCloseTo(600 / 1200);
    expect(hitRateBound([a, a], 'blocks')).toBeCloseTo(2 / 4);
    const b = { timestamp: 0, inputLength: 600, outputLength: 1, hashIds: [1, 3] };
    expect(hitRateBound([a, b], 'tokens')).toBeCloseTo(512 / 1200);
    expect(hitRateBound([a, b], 'blocks')).toBeCloseTo(1 / 4);
  });

  it('matches the bounds the traces README states', async () => {
    expect(hitRateBound(await loadTrace(`${traces}synthetic_trace.jsonl`), 'blocks')).toBeCloseTo(0.64, 2);
    expect(hitRateBound(await loadTrace(`${traces}conversation_trace.first-half.jsonl`), 'blocks')).toBeCloseTo(0.34, 2);
  });
});
