import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMING, resolveEngineConfig } from '../../../src/sim/engine/config.js';

describe('engine config', () => {
  it('fills in the documented defaults', () => {
    const c = resolveEngineConfig(undefined);
    expect(c).toMatchObject({
      blockSize: 16,
      kvBlocks: 16384,
      maxNumBatchedTokens: 8192,
      maxNumSeqs: 256,
      speedup: 1,
      seed: 0,
      eosProbability: 0,
      prefillHoldMs: 120_000,
      kvTransfer: { bytesPerToken: 131072, bandwidthBytesPerS: 25e9 },
      offloadBlocks: 0,
      offloadBandwidthBytesPerS: 25e9,
      kvEvents: true,
    });
    expect(c.timing).toEqual(DEFAULT_TIMING);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('merges a partial timing over the defaults', () => {
    const c = resolveEngineConfig({ timing: { prefill: { c: 0 }, decode: { minMs: 3 } } });
    expect(c.timing.prefill).toEqual({ ...DEFAULT_TIMING.prefill, c: 0 });
    expect(c.timing.decode).toEqual({ ...DEFAULT_TIMING.decode, minMs: 3 });
  });

  it('treats undefined options as defaults', () => {
    expect(resolveEngineConfig({ blockSize: undefined, seed: undefined }).blockSize).toBe(16);
  });

  it.each([
    [{ blockSize: 0 }, RangeError],
    [{ blockSize: 2.5 }, RangeError],
    [{ blockSize: '16' }, TypeError],
    [{ kvBlocks: 0 }, RangeError],
    [{ maxNumBatchedTokens: -1 }, RangeError],
    [{ maxNumSeqs: 0 }, RangeError],
    [{ speedup: 0 }, RangeError],
    [{ speedup: Infinity }, RangeError],
    [{ speedup: NaN }, RangeError],
    [{ seed: 1.5 }, RangeError],
    [{ eosProbability: 1.01 }, RangeError],
    [{ eosProbability: -0.1 }, RangeError],
    [{ prefillHoldMs: -1 }, RangeError],
    [{ timing: { prefill: { a: Number.NaN } } }, RangeError],
    [{ timing: { decode: { minMs: -1 } } }, RangeError],
    [{ timing: [] }, TypeError],
    [{ kvTransfer: { bandwidthBytesPerS: 0 } }, RangeError],
    [{ kvTransfer: { bytesPerToken: 'x' } }, TypeError],
    [{ offloadBlocks: -1 }, RangeError],
    [{ offloadBlocks: 1.5 }, RangeError],
    [{ offloadBlocks: 2 ** 30 }, RangeError],
    [{ offloadBlocks: '4096' }, TypeError],
    [{ offloadBandwidthBytesPerS: 0 }, RangeError],
    [{ offloadBandwidthBytesPerS: -1 }, RangeError],
    [{ offloadBandwidthBytesPerS: NaN }, RangeError],
    [{ offloadBandwidthBytesPerS: '25e9' }, TypeError],
    [{ kvEvents: 'no' }, TypeError],
    [{ kvEvents: 0 }, TypeError],
    [{ blocksize: 16 }, TypeError],
    ['fast', TypeError],
  ])('refuses %j', (cfg, error) => {
    expect(() => resolveEngineConfig(cfg)).toThrow(error);
  });

  it('accepts an infinite hold and an infinite bandwidth', () => {
    const c = resolveEngineConfig({ prefillHoldMs: Infinity, kvTransfer: { bytesPerToken: 1, bandwidthBytesPerS: Infinity } });
    expect(c.prefillHoldMs).toBe(Infinity);
  });
});
