// Scheduling behaviour through the model's public API: prefix reuse, LRU eviction, preemption,
// chunked prefill within the token budget, decode-first batching, the max_num_seqs cap.
import { describe, expect, it } from 'vitest';
import { decodeMs, prefillMs, resolveEngineConfig } from '../../../src/sim/engine/index.js';
import { model, outputsOf, prompt, removedHashes, runToIdle, storedHashes } from './helpers.js';

describe('prefix caching', () => {
  it('reuses the cached blocks of a shared prefix and reports them as cachedTokens', () => {
    const m = model({ blockSize: 4 });
    m.submit({ id: 'a', promptTokens: prompt(30), maxTokens: 3 }, 0);
    const first = runToIdle(m);
    expect(outputsOf(first, 'a').map((o) => o.cachedTokens)).toEqual([0, 0, 0]);
    // Same first 20 tokens, then different ones.
    const shared = prompt(40);
    shared.set(prompt(20), 0);
    shared.fill(7, 20);
    m.submit({ id: 'b', promptTokens: shared, maxTokens: 2 }, first.endMs);
    const second = runToIdle(m, first.endMs);
    expect(outputsOf(second, 'b')[0]).toMatchObject({ index: 0, promptTokens: 40, cachedTokens: 20 });
    expect(m.metrics()).toMatchObject({ promptTokens: 70, cachedTokens: 20 });
    expect(m.metrics().prefixHitRate).toBeCloseTo(20 / 70, 12);
    // The second prompt's first step computed only its uncached tokens.
    expect(second.steps[0].durationMs).toBeCloseTo(prefillMs(m.config, 20), 12);
  });

  it('always computes at least the last prompt token, even when the whole prompt is cached', () => {
    const m = model({ blockSize: 4 });
    m.submit({ id: 'a', promptTokens: prompt(12), maxTokens: 1 }, 0);
    const t = runToIdle(m).endMs;
    m.submit({ id: 'b', promptTokens: prompt(12), maxTokens: 1 }, t);
    m.submit({ id: 'c', promptTokens: prompt(13), maxTokens: 1 }, t);
    const r = runToIdle(m, t);
    expect(outputsOf(r, 'b')[0].cachedTokens).toBe(8); // the last block holds the last token
    expect(outputsOf(r, 'c')[0].cachedTokens).toBe(12);
  });

  it('caches generated tokens too: a follow-up turn hits the previous answer', () => {
    const m = model({ blockSize: 4 });
    m.submit({ id: 'turn1', promptTokens: prompt(8), maxTokens: 9 }, 0);
    const r = runToIdle(m);
    const answer = outputsOf(r, 'turn1').map((o) => o.tokenId);
    // KV exists for the prompt and the first 8 answer tokens (the 9th was sampled, never computed).
    const next = Uint32Array.from([...prompt(8), ...answer, 1, 2, 3]);
    m.submit({ id: 'turn2', promptTokens: next, maxTokens: 1 }, r.endMs);
    expect(outputsOf(runToIdle(m, r.endMs), 'turn2')[0].cachedTokens).toBe(16);
  });

  it('isolates LoRA adapters: the same tokens under another adapter do not hit', () => {
    const m = model({ blockSize: 4 });
    m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 1, loraName: 'x' }, 0);
    const t = runToIdle(m);
    expect(t.events.find((e) => e.type === 'BlockStored')).toMatchObject({ loraName: 'x', blockSize: 4, medium: 'GPU' });
    m.submit({ id: 'b', promptTokens: prompt(16), maxTokens: 1, loraName: 'y' }, t.endMs);
    m.submit({ id: 'c', promptTokens: prompt(16), maxTokens: 1 }, t.endMs);
    m.submit({ id: 'd', promptTokens: prompt(16), maxTokens: 1, loraName: 'x' }, t.endMs);
    const r = runToIdle(m, t.endMs);
    expect(['b', 'c', 'd'].map((id) => outputsOf(r, id)[0].cachedTokens)).toEqual([0, 0, 12]);
  });
});

describe('eviction', () => {
  it('evicts unreferenced cached blocks least recently used first, a sequence tail before its head', () => {
    const m = model({ blockSize: 4, kvBlocks: 6 });
    m.submit({ id: 'a', promptTokens: prompt(8, 0), maxTokens: 1 }, 0);
    let t = runToIdle(m);
    const [a0, a1] = storedHashes(t.events);
    m.submit({ id: 'b', promptTokens: prompt(8, 100), maxTokens: 1 }, t.endMs);
    t = runToIdle(m, t.endMs);
    const [b0, b1] = storedHashes(t.events);
    // 2 free blocks left: a 3-block prompt evicts one block, the oldest tail (a1).
    m.submit({ id: 'c', promptTokens: prompt(12, 200), maxTokens: 1 }, t.endMs);
    t = runToIdle(m, t.endMs);
    expect(removedHashes(t.events)).toEqual([a1]);
    expect(t.events[0].type).toBe('BlockRemoved'); // evicted before c's blocks are stored
    m.submit({ id: 'd', promptTokens: prompt(8, 300), maxTokens: 1 }, t.endMs);
    t = runToIdle(m, t.endMs);
    expect(removedHashes(t.events)).toEqual([a0, b1]);
    expect(m.cachedBlockHashes().has(b0)).toBe(true);
    expect(m.metrics().evictions).toBe(3);
    // b's first block survived: a prompt starting with it hits.
    const hit = prompt(8, 100);
    hit.fill(5, 4);
    m.submit({ id: 'e', promptTokens: hit, maxTokens: 1 }, t.endMs);
    expect(outputsOf(runToIdle(m, t.endMs), 'e')[0].cachedTokens).toBe(4);
  });
});

describe('preemption', () => {
  it('preempts the most recently admitted request when the cache runs out, then finishes both identically', () => {
    const solo = (id: string, offset: number) => {
      const m = model({ blockSize: 4, kvBlocks: 64 });
      m.submit({ id, promptTokens: prompt(8, offset), maxTokens: 14 }, 0);
      return outputsOf(runToIdle(m), id).map((o) => o.tokenId);
    };
    const m = model({ blockSize: 4, kvBlocks: 8 });
    m.submit({ id: 'a', promptTokens: prompt(8, 0), maxTokens: 14 }, 0);
    m.submit({ id: 'b', promptTokens: prompt(8, 500), maxTokens: 14 }, 0);
    const r = runToIdle(m);
    expect(m.metrics().preemptions).toBeGreaterThan(0);
    const a = outputsOf(r, 'a');
    const b = outputsOf(r, 'b');
    expect(a.map((o) => o.index)).toEqual([...Array(14).keys()]);
    expect(b.map((o) => o.index)).toEqual([...Array(14).keys()]);
    expect(a.map((o) => o.tokenId)).toEqual(solo('a', 0));
    expect(b.map((o) => o.tokenId)).toEqual(solo('b', 500));
    expect(a.at(-1)!.finishReason).toBe('length');
    // a (admitted first) is never the victim: it emits a token in every step until it is done.
    const stepsWithA = r.steps.filter((s) => s.outputs.some((o) => o.id === 'a')).length;
    const lastStepOfA = r.steps.findIndex((s) => s.outputs.some((o) => o.id === 'a' && o.finishReason));
    expect(stepsWithA).toBe(lastStepOfA + 1);
    expect(b.at(-1)!.finishReason).toBe('length');
    expect(m.metrics()).toMatchObject({ usedBlocks: 0, running: 0, waiting: 0 });
  });

  it('a preempted request recomputes only what fell out of the cache, and re-announces the same blocks', () => {
    const m = model({ blockSize: 4, kvBlocks: 8 });
    m.submit({ id: 'a', promptTokens: prompt(8, 0), maxTokens: 14 }, 0);
    m.submit({ id: 'b', promptTokens: prompt(8, 500), maxTokens: 14 }, 0);
    const r = runToIdle(m);
    expect(m.metrics().preemptions).toBe(1);
    // b was preempted after 9 tokens (17 in all, 4 full blocks b0..b3 cached). While a ran alone,
    // b3 then b2 were evicted (a tail goes first); b0 and b1 were still cached when b came back.
    const alone = model({ blockSize: 4, kvBlocks: 64 });
    alone.submit({ id: 'b', promptTokens: prompt(8, 500), maxTokens: 14 }, 0);
    const bStored = storedHashes(runToIdle(alone).events); // same content, same hashes
    const resume = r.steps.find((s) => s.outputs.some((o) => o.id === 'b' && o.index === 9))!;
    expect(resume.outputs.map((o) => o.id)).toEqual(['b']);
    expect(resume.durationMs).toBe(prefillMs(m.config, 17 - 8)); // tokens 8..16 recomputed
    expect(storedHashes(resume.events)).toEqual(bStored.slice(2, 4));
  });
});

describe('continuous batching', () => {
  it('splits a long prompt into chunks of the token budget over several steps', () => {
    const m = model({ blockSize: 16, kvBlocks: 64, maxNumBatchedTokens: 64 });
    m.submit({ id: 'long', promptTokens: prompt(200), maxTokens: 2 }, 0);
    const r = runToIdle(m);
    const cfg = m.config;
    expect(r.steps.slice(0, 4).map((s) => s.durationMs)).toEqual([prefillMs(cfg, 64), prefillMs(cfg, 64), prefillMs(cfg, 64), prefillMs(cfg, 8)]);
    expect(r.steps.slice(0, 3).every((s) => s.outputs.length === 0)).toBe(true);
    expect(r.steps[3].outputs).toMatchObject([{ id: 'long', index: 0 }]);
    // Blocks are announced as chunks fill them: 4 full blocks after 64 tokens, 12 after 200.
    const storedPerStep = r.steps.map((s) => storedHashes(s.events).length);
    expect(storedPerStep.slice(0, 4)).toEqual([4, 4, 4, 0]);
  });

  it('spends the budget on decode tokens first, then on prefill chunks', () => {
    const m = model({ blockSize: 16, kvBlocks: 64, maxNumBatchedTokens: 64 });
    m.submit({ id: 'chat', promptTokens: prompt(10, 9000), maxTokens: 50 }, 0);
    const first = m.step(0)!; // chat's prefill
    m.submit({ id: 'long', promptTokens: prompt(200), maxTokens: 1 }, first.durationMs);
    const s = m.step(first.durationMs)!;
    // chat decodes 1 token; long gets the remaining 63 of the budget.
    expect(s.outputs.map((o) => o.id)).toEqual(['chat']);
    const usage = m.metrics().usedBlocks / m.metrics().totalBlocks;
    expect(s.durationMs).toBeCloseTo(prefillMs(m.config, 63) + decodeMs(m.config, usage), 12);
  });

  it('admits waiting requests first come, first served, and caps running requests at maxNumSeqs', () => {
    const m = model({ blockSize: 4, kvBlocks: 256, maxNumSeqs: 2 });
    for (const id of ['a', 'b', 'c']) m.submit({ id, promptTokens: prompt(8, id.charCodeAt(0) * 100), maxTokens: 3 }, 0);
    let now = 0;
    const order: string[] = [];
    while (m.hasWork()) {
      const s = m.step(now)!;
      expect(m.metrics().running).toBeLessThanOrEqual(2);
      for (const o of s.outputs) if (o.index === 0) order.push(o.id);
      now += s.durationMs;
    }
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('a request stops with length when its context fills the whole cache', () => {
    const m = model({ blockSize: 4, kvBlocks: 4 });
    m.submit({ id: 'x', promptTokens: prompt(10), maxTokens: 100 }, 0);
    const out = outputsOf(runToIdle(m), 'x');
    expect(out).toHaveLength(6); // 10 + 6 = 16 tokens = the whole cache
    expect(out.at(-1)!.finishReason).toBe('length');
    m.submit({ id: 'y', promptTokens: prompt(15), maxTokens: 100 }, 1e6);
    expect(outputsOf(runToIdle(m, 1e6), 'y')).toMatchObject([{ index: 0, finishReason: 'length' }]);
  });

  it('decode step time follows the fraction of blocks in use', () => {
    const m = model({ blockSize: 4, kvBlocks: 10 });
    m.submit({ id: 'x', promptTokens: prompt(11), maxTokens: 5 }, 0);
    const r = runToIdle(m);
    const cfg = resolveEngineConfig({ blockSize: 4, kvBlocks: 10 });
    // Prefill of 11 tokens, then decodes at 3/10 (tokens 12), 4/10 (13..16), 4/10, 4/10.
    expect(r.steps.map((s) => s.durationMs)).toEqual([prefillMs(cfg, 11), decodeMs(cfg, 0.3), decodeMs(cfg, 0.4), decodeMs(cfg, 0.4), decodeMs(cfg, 0.4)]);
  });
});
