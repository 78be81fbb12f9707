// Forwarding a request's priority class to its engines (PrefillRouter's forwardPriority): the
// body's `priority` as each engine kind reads it (vLLM lower first: negated; SGLang higher first:
// as is; TensorRT-LLM: none), on every leg that computes or decodes, and never when off.
import { describe, expect, it, vi } from 'vitest';
import { enginePriorityField, lowerFirstPriority, withEnginePriority } from '../../src/engines/priority.js';
import type { EngineKind } from '../../src/engines/types.js';
import { PrefillRouter } from '../../src/routing/prefill-router.js';
import { type Fleet, collect, fleetPerTest, request } from './harness.js';

const start = fleetPerTest();

const body = () => ({ model: 'fake', prompt: Array.from({ length: 16 }, (_, i) => i + 1), max_tokens: 3, stream: true });

/** The `priority` field of every leg each pool's engines received. */
function sentPriorities(f: Fleet): { prefill: unknown[]; decode: unknown[] } {
  const of = (engines: Fleet['prefillEngines']) => engines.flatMap((e) => e.received.map((r) => (r.body as Record<string, unknown>).priority));
  return { prefill: of(f.prefillEngines), decode: of(f.decodeEngines) };
}

describe('the priority field by engine kind', () => {
  it('negates for vLLM, keeps for SGLang, gives none to TensorRT-LLM; the simulated engine reads it back lower-first', () => {
    expect(enginePriorityField('vllm', 2)).toBe(-2);
    expect(enginePriorityField('vllm', 0)).toBe(0);
    expect(Object.is(enginePriorityField('vllm', 0), -0)).toBe(false);
    expect(enginePriorityField('sglang', 2)).toBe(2);
    expect(enginePriorityField('trtllm', 2)).toBeUndefined();
    const b = { model: 'm', priority: 9 };
    expect(withEnginePriority(b, 'vllm', 1)).toEqual({ model: 'm', priority: -1 });
    expect(b.priority).toBe(9); // the client's body is not changed
    expect(withEnginePriority(b, 'trtllm', 1)).toBe(b);
    for (const kind of ['vllm', 'sglang'] as EngineKind[])
      for (const p of [-3, 0, 4]) expect(lowerFirstPriority(kind, enginePriorityField(kind, p)!)).toBe(p === 0 ? 0 : -p);
  });
});

describe('PrefillRouter forwardPriority', () => {
  it('aggregated on vLLM: the class goes negated, and a request without one goes as it came', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, router: { forwardPriority: true } });
    await collect((await f.router.handle(request({ body: body(), requestId: 'a', hints: { priority: 2 } }))).stream);
    await collect((await f.router.handle(request({ body: { ...body(), priority: 7 }, requestId: 'b' }))).stream);
    expect(sentPriorities(f).decode).toEqual([-2, 7]);
  });

  it('disaggregated on SGLang: both legs carry the class as is', async () => {
    const f = await start({ kind: 'sglang', prefill: 1, decode: 1, router: { forwardPriority: true } });
    await collect((await f.router.handle(request({ body: body(), requestId: 's', hints: { priority: 3 } }))).stream);
    expect(sentPriorities(f)).toEqual({ prefill: [3], decode: [3] });
  });

  it('disaggregated on vLLM: both legs carry it negated; on TensorRT-LLM neither carries one', async () => {
    const v = await start({ kind: 'vllm', prefill: 1, decode: 1, router: { forwardPriority: true } });
    await collect((await v.router.handle(request({ body: body(), requestId: 'v', hints: { priority: 1 } }))).stream);
    expect(sentPriorities(v)).toEqual({ prefill: [-1], decode: [-1] });
    const t = await start({ kind: 'trtllm', prefill: 1, decode: 1, router: { forwardPriority: true } });
    await collect((await t.router.handle(request({ body: body(), requestId: 't', hints: { priority: 1 } }))).stream);
    expect(sentPriorities(t)).toEqual({ prefill: [undefined], decode: [undefined] });
  });

  it('books each leg under the class its engine schedules it by (0 without one), none when off', async () => {
    const on = await start({ kind: 'sglang', prefill: 1, decode: 1, router: { forwardPriority: true } });
    const routed = (f: Fleet) => [vi.spyOn(f.router.prefill.core, 'route'), vi.spyOn(f.router.decode.core, 'route')];
    const [prefill, decode] = routed(on);
    await collect((await on.router.handle(request({ body: body(), requestId: 'p', hints: { priority: 3 } }))).stream);
    await collect((await on.router.handle(request({ body: body(), requestId: 'q' }))).stream);
    expect(prefill.mock.calls.map((c) => c[1].enginePriority)).toEqual([3, 0]);
    expect(decode.mock.calls.map((c) => c[1].enginePriority)).toEqual([3, 0]);
    // What /v1/route explains is routed the same way.
    const queried = [vi.spyOn(on.router.prefill.core, 'query'), vi.spyOn(on.router.decode.core, 'query')];
    on.router.query(Uint32Array.from(body().prompt), { priority: 2 });
    expect(queried.map((q) => q.mock.calls.at(-1)?.[1].enginePriority)).toEqual([2, 2]);
    const off = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    const [, aggregated] = routed(off);
    await collect((await off.router.handle(request({ body: body(), requestId: 'r', hints: { priority: 3 } }))).stream);
    expect(aggregated.mock.calls.map((c) => c[1].enginePriority)).toEqual([undefined]);
  });

  it('off by default: the body goes untouched', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    await collect((await f.router.handle(request({ body: body(), requestId: 'o', hints: { priority: 2 } }))).stream);
    expect(sentPriorities(f).decode).toEqual([undefined]);
  });

  it('refuses a forwardPriority that is not a boolean', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    const { prefill, decode } = f.router;
    for (const bad of ['yes', 1, null]) {
      expect(() => new PrefillRouter({ prefill, decode, forwardPriority: bad as never })).toThrow(
        expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/forwardPriority must be a boolean/) }),
      );
    }
  });
});
