import { describe, expect, it } from 'vitest';
import { resolveEngineConfig } from '../../../src/sim/engine/config.js';
import { decodeMs, idlePollMs, prefillMs, reloadMs, stepMs, transferMs } from '../../../src/sim/engine/timing.js';

describe('timing', () => {
  const cfg = resolveEngineConfig({});

  it("uses Dynamo's published prefill fit", () => {
    expect(prefillMs(cfg, 0)).toBe(0);
    expect(prefillMs(cfg, 1000)).toBeCloseTo(4.209989e-7 * 1e6 + 1.518344e-2 * 1000 + 16.50142, 9);
    expect(prefillMs(cfg, 8192)).toBeCloseTo(28.252 + 124.383 + 16.501, 2);
  });

  it('uses the decode fit with its 1 ms floor', () => {
    expect(decodeMs(cfg, 0)).toBeCloseTo(5.74, 12);
    expect(decodeMs(cfg, 0.5)).toBeCloseTo(-25.74 * 0.25 + 54.01 * 0.5 + 5.74, 12);
    expect(decodeMs(cfg, 1)).toBeCloseTo(34.01, 12);
    const floored = resolveEngineConfig({ timing: { decode: { a: 0, b: 0, c: -3, minMs: 2 } } });
    expect(decodeMs(floored, 0.3)).toBe(2);
  });

  it('a mixed step costs the sum of its prefill and decode parts', () => {
    expect(stepMs(cfg, 512, 0, 0.2)).toBe(prefillMs(cfg, 512));
    expect(stepMs(cfg, 0, 7, 0.2)).toBe(decodeMs(cfg, 0.2));
    expect(stepMs(cfg, 512, 7, 0.2)).toBeCloseTo(prefillMs(cfg, 512) + decodeMs(cfg, 0.2), 12);
  });

  it('speedup divides every duration', () => {
    const fast = resolveEngineConfig({ speedup: 8 });
    expect(prefillMs(fast, 300)).toBeCloseTo(prefillMs(cfg, 300) / 8, 12);
    expect(decodeMs(fast, 0.7)).toBeCloseTo(decodeMs(cfg, 0.7) / 8, 12);
    expect(transferMs(fast, 1000)).toBeCloseTo(transferMs(cfg, 1000) / 8, 12);
    expect(idlePollMs(fast)).toBeCloseTo(idlePollMs(cfg) / 8, 12);
  });

  it('a KV transfer takes tokens x bytes per token / bandwidth', () => {
    const t = resolveEngineConfig({ kvTransfer: { bytesPerToken: 2000, bandwidthBytesPerS: 1e6 } });
    expect(transferMs(t, 0)).toBe(0);
    expect(transferMs(t, 500)).toBeCloseTo(1000, 9); // 1 MB at 1 MB/s
    // Default: 128 KiB per token at 25 GB/s.
    expect(transferMs(cfg, 8192)).toBeCloseTo(((8192 * 131072) / 25e9) * 1000, 9);
    const instant = resolveEngineConfig({ kvTransfer: { bytesPerToken: 1, bandwidthBytesPerS: Infinity } });
    expect(transferMs(instant, 1e6)).toBe(0);
  });

  it('a reload from the CPU tier takes tokens x the KV bytes per token / the offload bandwidth', () => {
    const t = resolveEngineConfig({ kvTransfer: { bytesPerToken: 2000, bandwidthBytesPerS: 1e12 }, offloadBandwidthBytesPerS: 1e6, speedup: 2 });
    expect(reloadMs(t, 0)).toBe(0);
    expect(reloadMs(t, 500)).toBeCloseTo(500, 9); // 1 MB at 1 MB/s, twice as fast
    // Default: 128 KiB per token over PCIe 4.0 x16 (25 GB/s): a 16-token block in 0.084 ms.
    expect(reloadMs(cfg, 16)).toBeCloseTo(((16 * 131072) / 25e9) * 1000, 12);
  });
});
