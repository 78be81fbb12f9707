import { describe, expect, it } from 'vitest';
import { DEFAULT_TTFT_MODEL, KV_BYTES_PER_TOKEN, nativeTtftModel, RELOAD_BANDWIDTH, resolveTtftModel } from '../../src/core/ttft-model.js';

describe('resolveTtftModel', () => {
  it("defaults to the mocker's fit, reload times from the tiers' bandwidths", () => {
    const m = resolveTtftModel(undefined, 'ttft');
    expect(m).toEqual(DEFAULT_TTFT_MODEL);
    expect(m).not.toBe(DEFAULT_TTFT_MODEL);
    expect(m.reloadMsPerToken.host).toBeCloseTo((KV_BYTES_PER_TOKEN / RELOAD_BANDWIDTH.host) * 1000, 12);
    expect(m.reloadMsPerToken.disk).toBeGreaterThan(m.reloadMsPerToken.external);
  });

  it('refines a base model field by field', () => {
    const base = resolveTtftModel({ maxNumBatchedTokens: 4096 }, 'ttft');
    const m = resolveTtftModel({ prefill: { c: 5 }, reloadMsPerToken: { disk: 0.1 } }, 'w.ttft', base);
    expect(m.maxNumBatchedTokens).toBe(4096);
    expect(m.prefill).toEqual({ ...DEFAULT_TTFT_MODEL.prefill, c: 5 });
    expect(m.reloadMsPerToken).toEqual({ ...DEFAULT_TTFT_MODEL.reloadMsPerToken, disk: 0.1 });
    expect(nativeTtftModel(m)).toEqual({
      prefill: [m.prefill.a, m.prefill.b, 5],
      decode: [m.decode.a, m.decode.b, m.decode.c],
      decodeMinMs: 1,
      maxBatchedTokens: 4096,
      reloadMsPerToken: [m.reloadMsPerToken.host, 0.1, m.reloadMsPerToken.external],
      transferMsPerToken: 0,
    });
  });

  it('names the bad field', () => {
    expect(() => resolveTtftModel({ prefill: { a: Number.NaN } }, 'ttft')).toThrow(new RangeError('ttft.prefill.a must be a finite number, got NaN'));
    expect(() => resolveTtftModel({ decode: { minMs: -1 } }, 'ttft')).toThrow(/ttft.decode.minMs must be a finite number >= 0/);
    expect(() => resolveTtftModel({ maxNumBatchedTokens: 0 }, 'ttft')).toThrow(RangeError);
    expect(() => resolveTtftModel({ transferMsPerToken: '1' }, 'ttft')).toThrow(TypeError);
    expect(() => resolveTtftModel({ prefil: {} }, 'ttft')).toThrow(/ttft has an unknown field 'prefil'/);
    expect(() => resolveTtftModel({ decode: { d: 1 } }, 'ttft')).toThrow(/ttft.decode has an unknown field 'd'/);
    expect(() => resolveTtftModel([], 'ttft')).toThrow(TypeError);
  });
});
