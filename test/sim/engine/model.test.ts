// EngineModel's API: determinism, speedup, KV transfers, prefill holds, abort, reset, EOS, bad inputs.
import { describe, expect, it } from 'vitest';
import { EngineModel, decodeMs, type EngineConfig } from '../../../src/sim/engine/index.js';
import { model, outputsOf, prompt, runToIdle, storedHashes } from './helpers.js';

function workload(cfg: EngineConfig) {
  const m = model({ blockSize: 4, kvBlocks: 48, maxNumBatchedTokens: 32, eosProbability: 0.05, ...cfg });
  for (let i = 0; i < 12; i++) {
    const p = prompt(10 + ((i * 7) % 23), (i % 3) * 1000); // three families of shared prefixes
    m.submit({ id: `r${i}`, promptTokens: p, maxTokens: 5 + (i % 9) }, 0);
  }
  return runToIdle(m);
}

describe('EngineModel', () => {
  it('is idle until it gets work', () => {
    const m = new EngineModel();
    expect(m.hasWork()).toBe(false);
    expect(m.step(0)).toBeNull();
    expect(m.metrics()).toMatchObject({ kvUsage: 0, usedBlocks: 0, totalBlocks: 16384, running: 0, waiting: 0, prefixHitRate: 0 });
  });

  it('is deterministic: the same seed gives the same tokens, timings and events', () => {
    const a = workload({ seed: 3 });
    const b = workload({ seed: 3 });
    expect(b).toEqual(a);
    const c = workload({ seed: 4 });
    expect(c.outputs.map((o) => o.tokenId)).not.toEqual(a.outputs.map((o) => o.tokenId));
    // Text-like output: printable ASCII.
    expect(a.outputs.every((o) => o.tokenId >= 32 && o.tokenId <= 126)).toBe(true);
  });

  it('speedup divides every step duration and changes nothing else', () => {
    const slow = workload({ seed: 1 });
    const fast = workload({ seed: 1, speedup: 10 });
    expect(fast.outputs).toEqual(slow.outputs);
    expect(fast.events).toEqual(slow.events);
    expect(fast.steps).toHaveLength(slow.steps.length);
    fast.steps.forEach((s, i) => expect(s.durationMs).toBeCloseTo(slow.steps[i].durationMs / 10, 9));
  });

  it('kvEvents false reports no events and changes nothing else (evictions, offload and reset included)', () => {
    for (const extra of [{}, { kvBlocks: 12, offloadBlocks: 8 }]) {
      const on = workload({ seed: 2, ...extra });
      const off = workload({ seed: 2, ...extra, kvEvents: false });
      expect(on.events.some((e) => e.type === 'BlockStored')).toBe(true);
      if (extra.offloadBlocks) expect(on.events.some((e) => e.type === 'BlockRemoved' && e.medium === 'CPU')).toBe(true);
      expect(off.events).toEqual([]);
      expect(off.outputs).toEqual(on.outputs);
      expect(off.steps.map((s) => [s.startMs, s.durationMs])).toEqual(on.steps.map((s) => [s.startMs, s.durationMs]));
    }
    expect(model({ kvEvents: false }).reset()).toEqual([]);
  });

  it('ends requests on end-of-sequence draws unless they ignore EOS', () => {
    const m = model({ eosProbability: 0.2, kvBlocks: 4096 });
    for (let i = 0; i < 20; i++) m.submit({ id: `s${i}`, promptTokens: prompt(5, i * 10), maxTokens: 50 }, 0);
    for (let i = 0; i < 5; i++) m.submit({ id: `i${i}`, promptTokens: prompt(5, i * 10), maxTokens: 50, ignoreEos: true }, 0);
    const r = runToIdle(m);
    const last = (id: string) => outputsOf(r, id).at(-1)!;
    const stopped = Array.from({ length: 20 }, (_, i) => last(`s${i}`)).filter((o) => o.finishReason === 'stop');
    expect(stopped.length).toBeGreaterThan(15); // P(50 tokens without EOS) = 0.8^50
    for (let i = 0; i < 5; i++) expect(last(`i${i}`)).toMatchObject({ index: 49, finishReason: 'length' });
    expect(m.metrics().generatedTokens).toBe(r.outputs.length);
  });

  it('abort drops a request wherever it is and frees its blocks', () => {
    const m = model({ blockSize: 4, kvBlocks: 64, maxNumSeqs: 1 });
    m.submit({ id: 'run', promptTokens: prompt(9), maxTokens: 100 }, 0);
    m.submit({ id: 'wait', promptTokens: prompt(9, 50), maxTokens: 100 }, 0);
    const s = m.step(0)!;
    expect(s.outputs.map((o) => o.id)).toEqual(['run']);
    expect(m.metrics()).toMatchObject({ running: 1, waiting: 1, usedBlocks: 3 });
    expect(m.abort('run', 20)).toBe(true);
    expect(m.abort('run', 20)).toBe(false);
    expect(m.abort('wait', 20)).toBe(true);
    expect(m.abort('nobody', 20)).toBe(false);
    expect(m.metrics()).toMatchObject({ running: 0, waiting: 0, usedBlocks: 0, cachedBlocks: 2 });
    expect(m.hasWork()).toBe(false);
    // The id can be used again.
    m.submit({ id: 'run', promptTokens: prompt(9), maxTokens: 1 }, 30);
    expect(outputsOf(runToIdle(m, 30), 'run')).toMatchObject([{ index: 0, cachedTokens: 8, finishReason: 'length' }]);
  });

  it('reset drops the prefix cache with one AllBlocksCleared; running requests carry on', () => {
    const m = model({ blockSize: 4 });
    m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 1 }, 0);
    const t = runToIdle(m);
    m.submit({ id: 'b', promptTokens: prompt(8, 77), maxTokens: 12 }, t.endMs);
    const s = m.step(t.endMs)!;
    expect(m.reset()).toEqual([{ type: 'AllBlocksCleared' }]);
    expect(m.cachedBlockHashes().size).toBe(0);
    const rest = runToIdle(m, t.endMs + s.durationMs);
    expect(outputsOf(rest, 'b')).toHaveLength(11);
    // b's blocks before the reset are gone from the cache, so nothing after them can be chained.
    expect(storedHashes(rest.events)).toEqual([]);
    m.submit({ id: 'c', promptTokens: prompt(16), maxTokens: 1 }, rest.endMs);
    expect(outputsOf(runToIdle(m, rest.endMs), 'c')[0].cachedTokens).toBe(0);
  });
});

describe('KV transfer (decode side of disaggregation)', () => {
  const transfer = { bytesPerToken: 1000, bandwidthBytesPerS: 1e6 }; // 1 ms per token

  it('allocates the transferred tokens, waits tokens x bytes / bandwidth, then computes only the rest', () => {
    const m = model({ blockSize: 4, kvBlocks: 64, kvTransfer: transfer });
    m.submit({ id: 'd', promptTokens: prompt(41), maxTokens: 3, kvTransferredTokens: 40 }, 0);
    const first = m.step(0)!;
    expect(first.outputs).toEqual([]);
    expect(m.metrics()).toMatchObject({ usedBlocks: 10, running: 0, waiting: 1 });
    const r = runToIdle(m, first.durationMs);
    const firstToken = r.steps.find((s) => s.outputs.length > 0)!;
    expect(firstToken.startMs).toBeGreaterThanOrEqual(40);
    expect(firstToken.startMs).toBeLessThan(42);
    // The transferred blocks are cached when they arrive, and the one token left costs a decode pass.
    expect(storedHashes(firstToken.events)).toHaveLength(10);
    expect(firstToken.durationMs).toBeCloseTo(decodeMs(m.config, 11 / 64), 12);
    expect(outputsOf(r, 'd').map((o) => o.index)).toEqual([0, 1, 2]);
    expect(outputsOf(r, 'd')[0].cachedTokens).toBe(0);
    // No step waits past the transfer's end: idle polls are short.
    expect(r.steps.filter((s) => s.startMs < 40).every((s) => s.durationMs <= 1)).toBe(true);
  });

  it('a whole-prompt transfer still computes the last prompt token locally', () => {
    const m = model({ blockSize: 4, kvBlocks: 64, kvTransfer: transfer, speedup: 4 });
    m.submit({ id: 'd', promptTokens: prompt(12), maxTokens: 1, kvTransferredTokens: 12 }, 0);
    const r = runToIdle(m);
    const firstToken = r.steps.find((s) => s.outputs.length > 0)!;
    expect(firstToken.startMs).toBeGreaterThanOrEqual(11 / 4); // 11 tokens at 1 ms each, 4x faster
    expect(firstToken.startMs).toBeLessThan(11 / 4 + 0.25);
    // Blocks 0-1 arrive complete; block 2 completes when its last token is computed, in the same step.
    expect(storedHashes(firstToken.events)).toHaveLength(3);
    expect(storedHashes(r.events)).toHaveLength(3);
  });

  it('transfers only what the local prefix cache lacks', () => {
    const m = model({ blockSize: 4, kvBlocks: 64, kvTransfer: transfer });
    m.submit({ id: 'warm', promptTokens: prompt(16), maxTokens: 1 }, 0);
    const t = runToIdle(m).endMs;
    m.submit({ id: 'd', promptTokens: prompt(41), maxTokens: 1, kvTransferredTokens: 40 }, t);
    const r = runToIdle(m, t);
    const firstToken = r.steps.find((s) => s.outputs.length > 0)!;
    expect(firstToken.startMs - t).toBeGreaterThanOrEqual(24);
    expect(firstToken.startMs - t).toBeLessThan(26);
    expect(outputsOf(r, 'd')[0].cachedTokens).toBe(16);
  });
  it('a request receiving KV holds a running seat, so a lone request can always make room (no deadlock)', () => {
    // Found by the events property test: a transfer parked in the waiting queue with its blocks
    // while the only running request needed them.
    const m = model({ blockSize: 2, kvBlocks: 6, maxNumBatchedTokens: 1, maxNumSeqs: 1, kvTransfer: transfer });
    m.submit({ id: 't', promptTokens: prompt(2), maxTokens: 1, kvTransferredTokens: 1 }, 0);
    m.submit({ id: 'long', promptTokens: prompt(1, 50), maxTokens: 11 }, 0);
    const first = m.step(0)!;
    expect(m.metrics()).toMatchObject({ running: 0, waiting: 2 }); // t transferring (its seat taken), long waiting
    const r = runToIdle(m, first.durationMs);
    expect(outputsOf(r, 't')).toHaveLength(1);
    expect(outputsOf(r, 'long')).toHaveLength(11);
    expect(m.metrics().usedBlocks).toBe(0);
  });
});

describe('prefill holds', () => {
  const held = { id: 'p', promptTokens: prompt(20), maxTokens: 1, holdBlocksAfterFinish: true };

  it('keeps a finished prefill’s blocks referenced until release()', () => {
    const m = model({ blockSize: 4, kvBlocks: 64 });
    m.submit(held, 0);
    const r = runToIdle(m);
    expect(outputsOf(r, 'p')).toMatchObject([{ index: 0, finishReason: 'length' }]);
    expect(m.hasWork()).toBe(false);
    expect(m.metrics()).toMatchObject({ usedBlocks: 5, heldRequests: 1 });
    expect(() => m.submit(held, r.endMs)).toThrow(RangeError); // the id is still in use
    expect(m.release('p')).toBe(true);
    expect(m.release('p')).toBe(false);
    expect(m.metrics()).toMatchObject({ usedBlocks: 0, heldRequests: 0, cachedBlocks: 5 });
  });

  it('frees held blocks once prefillHoldMs has passed (checked on step and submit)', () => {
    const m = model({ blockSize: 4, kvBlocks: 64, prefillHoldMs: 100 });
    m.submit(held, 0);
    const end = runToIdle(m).endMs;
    expect(m.step(end + 99.9)).toBeNull();
    expect(m.metrics().heldRequests).toBe(1);
    expect(m.step(end + 100)).toBeNull();
    expect(m.metrics()).toMatchObject({ heldRequests: 0, usedBlocks: 0 });
    m.submit({ ...held, id: 'q' }, end + 200);
    const end2 = runToIdle(m, end + 200).endMs;
    m.submit({ id: 'x', promptTokens: prompt(3, 999), maxTokens: 1 }, end2 + 100);
    expect(m.metrics().heldRequests).toBe(0);
  });

  it('a release before the finish frees the blocks at the finish; abort frees a held prefill', () => {
    const m = model({ blockSize: 4, kvBlocks: 64 });
    m.submit(held, 0);
    expect(m.release('p')).toBe(true);
    expect(m.release('p')).toBe(false);
    runToIdle(m);
    expect(m.metrics()).toMatchObject({ usedBlocks: 0, heldRequests: 0 });
    m.submit({ ...held, id: 'p2' }, 100);
    runToIdle(m, 100);
    expect(m.abort('p2', 200)).toBe(true);
    expect(m.metrics()).toMatchObject({ usedBlocks: 0, heldRequests: 0 });
    expect(m.release('nobody')).toBe(false);
  });

  it('held blocks are never evicted: a request that needs them waits for the hold to end', () => {
    const m = model({ blockSize: 4, kvBlocks: 8, prefillHoldMs: 50 });
    m.submit(held, 0); // 5 blocks held
    const end = runToIdle(m).endMs;
    m.submit({ id: 'big', promptTokens: prompt(20, 500), maxTokens: 1 }, end);
    const r = runToIdle(m, end);
    const served = r.steps.find((s) => s.outputs.length > 0)!;
    expect(served.startMs).toBeGreaterThanOrEqual(end + 50);
    expect(served.startMs).toBeLessThan(end + 52);
    expect(r.steps.filter((s) => s.outputs.length === 0).every((s) => s.durationMs <= 1)).toBe(true);
  });
});

describe('bad inputs', () => {
  const ok = { id: 'ok', promptTokens: prompt(4), maxTokens: 1 };

  it.each([
    [null, TypeError],
    ['req', TypeError],
    [{ ...ok, id: '' }, TypeError],
    [{ ...ok, id: 7 }, TypeError],
    [{ ...ok, promptTokens: [1, 2, 3] }, TypeError],
    [{ ...ok, promptTokens: new Int32Array(3) }, TypeError],
    [{ ...ok, promptTokens: new Uint32Array(0) }, RangeError],
    [{ ...ok, maxTokens: 0 }, RangeError],
    [{ ...ok, maxTokens: 1.5 }, RangeError],
    [{ ...ok, maxTokens: '3' }, TypeError],
    [{ ...ok, maxTokens: undefined }, TypeError],
    [{ ...ok, loraName: 3 }, TypeError],
    [{ ...ok, kvTransferredTokens: 5 }, RangeError],
    [{ ...ok, kvTransferredTokens: -1 }, RangeError],
    [{ ...ok, holdBlocksAfterFinish: 'yes' }, TypeError],
    [{ ...ok, ignoreEos: 1 }, TypeError],
  ])('submit refuses %o and changes nothing', (req, error) => {
    const m = model();
    expect(() => m.submit(req as never, 0)).toThrow(error);
    expect(m.hasWork()).toBe(false);
    expect(m.metrics().waiting).toBe(0);
  });

  it('refuses a prompt that can never fit the cache (with one generated token)', () => {
    const m = model({ blockSize: 4, kvBlocks: 4 });
    expect(() => m.submit({ id: 'big', promptTokens: prompt(16), maxTokens: 1 }, 0)).toThrow(/never fit/);
    expect(() => m.submit({ id: 'fits', promptTokens: prompt(15), maxTokens: 1 }, 0)).not.toThrow();
  });

  it('refuses a duplicate id while the first request is live', () => {
    const m = model();
    m.submit(ok, 0);
    expect(() => m.submit(ok, 0)).toThrow(RangeError);
    expect(m.metrics().waiting).toBe(1);
  });

  it('refuses a time that is not a finite number', () => {
    const m = model();
    expect(() => m.step(Number.NaN)).toThrow(TypeError);
    expect(() => m.submit(ok, Infinity)).toThrow(TypeError);
    expect(() => m.abort('ok', '1' as never)).toThrow(TypeError);
  });

  it('refuses bad engine options at construction', () => {
    expect(() => new EngineModel({ kvBlocks: 0 })).toThrow(RangeError);
    expect(() => new EngineModel({ nonsense: 1 } as never)).toThrow(TypeError);
  });
});
