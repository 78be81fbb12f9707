import { describe, expect, it } from 'vitest';
import { isAbortError } from '../../../src/engines/errors.js';
import type { Leg } from '../../../src/engines/transport.js';
import type { EngineKind, WorkerInfo } from '../../../src/engines/types.js';
import { EventQueue } from '../../../src/sim/replay/event-queue.js';
import { setupPolicy } from '../../../src/sim/replay/policies.js';
import { VirtualTransport } from '../../../src/sim/replay/virtual-transport.js';
import { type StepDone, VirtualPool } from '../../../src/sim/replay/virtual-pool.js';

/** One simulated engine behind the transport, stepped by hand. */
function setup(role: WorkerInfo['role'] = 'aggregated', kind: EngineKind = 'vllm') {
  let now = 0;
  const steps = new EventQueue<StepDone>();
  const pool = new VirtualPool('p', 1, { blockSize: 4, kvBlocks: 64 }, setupPolicy('round_robin', { blockSize: 4, seed: 0, clock: () => now }), steps, 0, [7]);
  const t = new VirtualTransport(() => now);
  const info: WorkerInfo = { id: 7, role, kind, baseUrl: 'http://replay-worker-7.invalid', dpSize: 1 };
  t.addWorker(info, pool, 0);
  const leg = (body: Record<string, unknown>, signal?: AbortSignal): Leg => ({
    worker: info,
    dpRank: 0,
    route: '/v1/completions',
    body,
    requestId: 'r1',
    signal,
  });
  /** Runs the engine until it is idle; returns whether the router saw anything. */
  const runAll = () => {
    let seen = false;
    while (steps.size > 0) {
      const { time, item } = steps.pop()!;
      now = time;
      seen = t.deliver(item.pool, item.index, item.pool.completeStep(item.index, time)) || seen;
    }
    return seen;
  };
  return { t, pool, info, leg, runAll };
}

const prompt = Uint32Array.from({ length: 12 }, (_, i) => i + 1);

describe('VirtualTransport faults: a worker down', () => {
  it('refuses legs before accepting them while down (no onSent), over its span of virtual time, and accepts them again after', async () => {
    const { t, leg, runAll } = setup();
    t.setDown(7, { fromMs: 0, toMs: 100 });
    let sent = 0;
    const refused = await t.json({ ...leg({ prompt, max_tokens: 1 }), onSent: () => sent++ }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ failure: 'engine_unreachable', mayHaveAccepted: false, status: 502 });
    expect(sent).toBe(0);
    expect(t.stats().refusedLegs).toBe(1);
    runAll(); // nothing runs
    const later = setup();
    later.t.setDown(7, { fromMs: 50 });
    const answer = later.t.json({ ...later.leg({ prompt, max_tokens: 1 }), onSent: () => sent++ });
    expect(sent).toBe(1); // accepted: before the span
    later.runAll();
    await answer;
    later.t.setDown(7, false);
    const again = later.t.json({ ...later.leg({ prompt, max_tokens: 1 }), requestId: 'r2' });
    later.runAll();
    await expect(again).resolves.toMatchObject({ object: 'text_completion' });
  });

  it('takes a worker down until told otherwise, and refuses bad spans and unknown workers', async () => {
    const { t, leg } = setup();
    t.setDown(7);
    await expect(t.json(leg({ prompt, max_tokens: 1 }))).rejects.toMatchObject({ mayHaveAccepted: false });
    t.setDown(7, false);
    let sent = false;
    void t.json({ ...leg({ prompt, max_tokens: 1 }), onSent: () => (sent = true) });
    expect(sent).toBe(true);
    expect(t.stats().refusedLegs).toBe(1);
    expect(() => t.setDown(8)).toThrow(/no simulated worker 8/);
    expect(() => t.setDown(7, { fromMs: 10, toMs: 10 })).toThrow(RangeError);
    expect(() => t.setDown(7, { fromMs: Number.NaN })).toThrow(RangeError);
  });
});

describe('VirtualTransport', () => {
  it('answers a JSON leg with a completion and its usage once the engine finished it', async () => {
    const { t, leg, runAll } = setup();
    const answer = t.json(leg({ prompt, max_tokens: 3 }));
    expect(runAll()).toBe(true);
    expect(await answer).toMatchObject({
      object: 'text_completion',
      choices: [{ finish_reason: 'length' }],
      usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('streams the first token, then the rest with the usage chunk and [DONE]', async () => {
    const { t, leg, runAll } = setup();
    const stream = await t.stream(leg({ prompt, max_tokens: 4, stream: true, stream_options: { include_usage: true } }));
    runAll();
    const first = await stream.nextBatch();
    expect(first).toHaveLength(1);
    expect(first![0].json).toMatchObject({ choices: [{ finish_reason: null }] });
    const rest = await stream.nextBatch();
    expect(rest!.map((e) => e.data.includes('"usage"') || e.data === '[DONE]' || e.data.includes('"finish_reason":"length"'))).toEqual([true, true, true]);
    expect(await stream.nextBatch()).toBeNull();
  });

  it('refuses what an engine would: no token prompt, a bad max_tokens, a prompt that can never fit, a prefill without its handoff marker', async () => {
    const { t, leg } = setup();
    await expect(t.json(leg({ prompt: [1, 2, 3] }))).rejects.toMatchObject({ status: 400, failure: 'engine_rejected' });
    await expect(t.json(leg({ prompt, max_tokens: 0 }))).rejects.toMatchObject({ status: 400 });
    await expect(t.json(leg({ prompt: new Uint32Array(4096) }))).rejects.toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    const p = setup('prefill', 'vllm');
    await expect(p.t.json(p.leg({ prompt }))).rejects.toMatchObject({ status: 400, body: { error: { code: 'missing_kv_transfer_params' } } });
    const s = setup('prefill', 'sglang');
    await expect(s.t.json(s.leg({ prompt, bootstrap_room: 5n, bootstrap_host: 'elsewhere', bootstrap_port: 1 }))).rejects.toMatchObject({ status: 400 });
  });

  it('an unknown worker was never reached; an aborted leg is an AbortError and leaves the engine', async () => {
    const { t, leg, info, pool, runAll } = setup();
    await expect(t.json({ ...leg({ prompt }), worker: { ...info, id: 99 } })).rejects.toMatchObject({ failure: 'engine_unreachable', mayHaveAccepted: false });
    await expect(t.json(leg({ prompt }, AbortSignal.abort()))).rejects.toSatisfy(isAbortError);
    const ac = new AbortController();
    const answer = t.json(leg({ prompt, max_tokens: 50 }, ac.signal));
    expect(pool.engines[0].hasWork()).toBe(true);
    ac.abort();
    await expect(answer).rejects.toSatisfy(isAbortError);
    expect(pool.engines[0].hasWork()).toBe(false);
    runAll();
    // The same request sent again gets a fresh engine id: the aborted one's last step reports nothing to it.
    const again = t.json(leg({ prompt, max_tokens: 2 }));
    runAll();
    await expect(again).resolves.toMatchObject({ usage: { completion_tokens: 2 } });
  });

  it('a cancelled stream takes its request off the engine', async () => {
    const { t, leg, pool } = setup();
    const stream = await t.stream(leg({ prompt, max_tokens: 50, stream: true }));
    stream.cancel();
    expect(pool.engines[0].hasWork()).toBe(false);
    expect(await stream.nextBatch()).toBeNull();
  });

  it('injects failures like the simulated workers fail_next, and checks its arguments', async () => {
    const { t, leg } = setup();
    t.failNext(7, 1);
    await expect(t.json(leg({ prompt }))).rejects.toMatchObject({ status: 500, body: { error: { code: 'injected_fault' } } });
    expect(t.stats().injectedFailures).toBe(1);
    expect(() => t.failNext(8, 1)).toThrow(RangeError);
    expect(() => t.failNext(7, -1)).toThrow(RangeError);
  });
});

describe('VirtualTransport: the body’s priority', () => {
  it('answers 400 to a priority that is not an integer, and to a non-zero one on an engine that schedules fcfs', async () => {
    const { t, leg, runAll } = setup();
    for (const priority of ['1', 1.5, Number.NaN]) {
      await expect(t.json(leg({ prompt, max_tokens: 1, priority }))).rejects.toMatchObject({ status: 400, failure: 'engine_rejected' });
    }
    await expect(t.json(leg({ prompt, max_tokens: 1, priority: 2 }))).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/schedulingPolicy 'priority'/),
    });
    // Priority 0 is every request's under fcfs: served.
    const ok = t.json(leg({ prompt, max_tokens: 1, priority: 0 }));
    runAll();
    await expect(ok).resolves.toMatchObject({ object: 'text_completion' });
  });
});
