// The engine model's priority scheduling (vLLM's --scheduling-policy priority): the waiting queue
// by priority (lower first) then submission, preemption of the lowest-priority running request,
// and the refusals (a bad policy, a bad priority, a priority under fcfs).
import { describe, expect, it } from 'vitest';
import { resolveEngineConfig } from '../../../src/sim/engine/index.js';
import { model, outputsOf, prompt, runToIdle } from './helpers.js';

/** The order of the requests' first tokens. */
function firstTokenOrder(outputs: ReturnType<typeof runToIdle>['outputs']): string[] {
  return outputs.filter((o) => o.index === 0).map((o) => o.id);
}

describe('priority scheduling', () => {
  it('admits waiting requests by priority, lower first, then in submission order', () => {
    // One sequence at a time: admission order is first-token order.
    const m = model({ blockSize: 4, kvBlocks: 256, maxNumSeqs: 1, schedulingPolicy: 'priority' });
    m.submit({ id: 'low-a', promptTokens: prompt(8, 0), maxTokens: 2, priority: 5 }, 0);
    m.submit({ id: 'low-b', promptTokens: prompt(8, 100), maxTokens: 2, priority: 5 }, 0);
    m.submit({ id: 'high', promptTokens: prompt(8, 200), maxTokens: 2, priority: -1 }, 0);
    m.submit({ id: 'mid', promptTokens: prompt(8, 300), maxTokens: 2 }, 0);
    expect(firstTokenOrder(runToIdle(m).outputs)).toEqual(['high', 'mid', 'low-a', 'low-b']);
  });

  it('serves fcfs in submission order whatever the engine was asked', () => {
    const m = model({ blockSize: 4, kvBlocks: 256, maxNumSeqs: 1 });
    m.submit({ id: 'a', promptTokens: prompt(8, 0), maxTokens: 2 }, 0);
    m.submit({ id: 'b', promptTokens: prompt(8, 100), maxTokens: 2, priority: 0 }, 0);
    expect(firstTokenOrder(runToIdle(m).outputs)).toEqual(['a', 'b']);
  });

  it('preempts the lowest-priority running request when the cache runs out, not the latest admitted', () => {
    // 8 blocks of 4 tokens: two requests growing to 22 tokens cannot both stay (as scheduler.test's
    // preemption case, where fcfs preempts the later one). Here the earlier one has the lower priority.
    const m = model({ blockSize: 4, kvBlocks: 8, schedulingPolicy: 'priority' });
    m.submit({ id: 'low', promptTokens: prompt(8, 0), maxTokens: 14, priority: 1 }, 0);
    m.submit({ id: 'high', promptTokens: prompt(8, 500), maxTokens: 14, priority: 0 }, 0);
    const r = runToIdle(m);
    expect(m.metrics().preemptions).toBeGreaterThan(0);
    expect(outputsOf(r, 'high').map((o) => o.index)).toEqual([...Array(14).keys()]);
    expect(outputsOf(r, 'low').map((o) => o.index)).toEqual([...Array(14).keys()]);
    // high is never the victim: it emits a token in every step from its first until it is done.
    const withHigh = r.steps.map((s, i) => (s.outputs.some((o) => o.id === 'high') ? i : -1)).filter((i) => i >= 0);
    expect(withHigh.at(-1)! - withHigh[0] + 1).toBe(withHigh.length);
    expect(m.metrics()).toMatchObject({ usedBlocks: 0, running: 0, waiting: 0 });
  });

  it('refuses a bad schedulingPolicy, a non-integer priority, and a non-zero priority under fcfs (as vLLM does)', () => {
    expect(() => resolveEngineConfig({ schedulingPolicy: 'lifo' })).toThrow(RangeError);
    expect(() => resolveEngineConfig({ schedulingPolicy: 1 })).toThrow(/schedulingPolicy must be 'fcfs' or 'priority'/);
    expect(resolveEngineConfig({}).schedulingPolicy).toBe('fcfs');
    const p = model({ schedulingPolicy: 'priority' });
    expect(() => p.submit({ id: 'x', promptTokens: prompt(4), maxTokens: 1, priority: 1.5 }, 0)).toThrow(RangeError);
    expect(() => p.submit({ id: 'y', promptTokens: prompt(4), maxTokens: 1, priority: '1' as never }, 0)).toThrow(TypeError);
    const f = model();
    expect(() => f.submit({ id: 'z', promptTokens: prompt(4), maxTokens: 1, priority: 2 }, 0)).toThrow(/needs schedulingPolicy 'priority'/);
    // Nothing was queued by the refusals: the ids are free and the engines idle.
    expect(p.step(0)).toBeNull();
    expect(f.step(0)).toBeNull();
    p.submit({ id: 'x', promptTokens: prompt(4), maxTokens: 1, priority: 1 }, 0);
    expect(outputsOf(runToIdle(p), 'x')).toHaveLength(1);
  });
});
