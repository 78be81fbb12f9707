// The router queue, priorities and conditional disaggregation in replay: the server's routing code
// in virtual time, overloaded on purpose.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { RoutingTotals } from '../../../src/core/routing-core.js';
import { loadTrace, parseTrace, type TraceRequest } from '../../../src/sim/replay/trace.js';
import { VirtualFleet, type VirtualFleetOptions } from '../../../src/sim/replay/virtual-fleet.js';
import { VirtualTimers } from '../../../src/sim/replay/virtual-timers.js';
import { summarizeRun } from '../../../src/sim/replay/summary.js';

const tracePath = fileURLToPath(new URL('../../../traces/synthetic_trace.jsonl', import.meta.url));
let burst: TraceRequest[];

beforeAll(async () => {
  // 80 requests arriving together: far more prefill than 2 workers take at once.
  burst = (await loadTrace(tracePath)).slice(0, 80).map((r) => ({ ...r, timestamp: 0 }));
});

const engine = { blockSize: 16, kvBlocks: 16_384 };
const zero = (t: RoutingTotals) => t.requests === 0 && t.prefillTokens === 0 && t.decodeBlocks === 0;
const aggregated = (o: Partial<VirtualFleetOptions> = {}) => new VirtualFleet({ workers: 2, policy: 'kv', engine, seed: 3, arrivalScale: 1, ...o });
const ttft = (r: { firstTokenMs: number; arrivalMs: number }) => r.firstTokenMs - r.arrivalMs;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('the router queue in replay', () => {
  it('holds the burst in the router and serves the high-priority share first; every booking freed', async () => {
    const fleet = aggregated({ routerQueue: { threshold: 1 }, highPriorityShare: 0.25 });
    const run = await fleet.run(burst);
    expect(run.records.every((r) => Number.isFinite(r.finishMs) && !r.refused)).toBe(true);
    const high = run.records.filter((r) => r.priority === 1);
    const low = run.records.filter((r) => r.priority === 0);
    expect(high.length).toBeGreaterThan(10);
    expect(low.length).toBeGreaterThan(40);
    expect(run.queues.decode.queued).toBeGreaterThan(40);
    expect(run.queues.decode.dispatched).toBe(run.queues.decode.queued);
    expect(run.queues.decode.depth).toBe(0);
    // Strict classes: the high ones wait only for each other and the work already booked.
    expect(mean(high.map(ttft))).toBeLessThan(mean(low.map(ttft)) / 2);
    expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
    const s = summarizeRun(run, 0);
    expect(Object.keys(s.ttft_p90_ms_by_priority!)).toEqual(['0', '1']);
    expect(s.queue!.queued).toBe(run.queues.decode.queued);
  });

  it('without the queue, the same priorities change nothing (the engines are first come, first served)', async () => {
    const run = await aggregated({ highPriorityShare: 0.25 }).run(burst);
    expect(run.queues.decode.queued).toBe(0);
    const high = run.records.filter((r) => r.priority === 1);
    const low = run.records.filter((r) => r.priority === 0);
    expect(mean(high.map(ttft))).toBeGreaterThan(mean(low.map(ttft)) / 2);
  });

  it('refuses beyond its bound (counted as refused in the records), and takes priorities from the trace', async () => {
    const text = burst
      .slice(0, 30)
      .map((r, i) => JSON.stringify({ timestamp: 0, input_length: r.inputLength, output_length: r.outputLength, hash_ids: r.hashIds, priority: i < 5 ? 2 : 0 }))
      .join('\n');
    const trace = parseTrace(text);
    const fleet = aggregated({ routerQueue: { threshold: 0, maxRequests: 4 } });
    const run = await fleet.run(trace);
    const refused = run.records.filter((r) => r.refused);
    expect(refused.length).toBeGreaterThan(0);
    expect(run.queues.decode.rejected.queue_full_requests + run.queues.decode.rejected.displaced).toBe(refused.length);
    // Priority 2 came first and ranks first: none of them is refused.
    expect(run.records.slice(0, 5).every((r) => r.priority === 2 && !r.refused)).toBe(true);
    expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
  });

  it('sheds at maxWaitMs on virtual timers (never Node timers), reproducibly, every booking freed', async () => {
    const fires = vi.spyOn(VirtualTimers.prototype, 'fireNext');
    const nodeTimers = vi.spyOn(globalThis, 'setTimeout');
    try {
      const runOnce = async () => {
        const fleet = aggregated({ routerQueue: { threshold: 0, maxWaitMs: 50 } });
        const run = await fleet.run(burst);
        expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
        return run;
      };
      const a = await runOnce();
      expect(fires).toHaveBeenCalled();
      // The queue set no Node timer (the one Node timer of a replay run is a stream's 120 s idle guard).
      expect(nodeTimers.mock.calls.filter((c) => c[1] !== 120_000)).toEqual([]);
      const expired = a.queues.decode.rejected.expired;
      expect(expired).toBeGreaterThan(0);
      expect(a.records.filter((r) => r.refused).length).toBe(expired + a.queues.decode.rejected.wait_too_long);
      expect((await runOnce()).records).toEqual(a.records);
    } finally {
      fires.mockRestore();
      nodeTimers.mockRestore();
    }
  });

  it('is reproducible', async () => {
    const a = await aggregated({ routerQueue: { threshold: 1, policy: 'wspt' }, highPriorityShare: 0.25 }).run(burst);
    const b = await aggregated({ routerQueue: { threshold: 1, policy: 'wspt' }, highPriorityShare: 0.25 }).run(burst);
    expect(a.records).toEqual(b.records);
  });
});

describe('conditional disaggregation in replay', () => {
  it('serves the short prompts aggregated and the long ones disaggregated, with their reasons', async () => {
    const fleet = new VirtualFleet({
      workers: 0,
      disaggregated: { prefill: 1, decode: 1 },
      policy: 'kv',
      engine,
      seed: 1,
      arrivalScale: 1,
      conditionalDisagg: { enabled: true, bypassBelowTokens: 8000, disaggAboveTokens: 30_000, queueAware: false },
    });
    const trace = burst.slice(0, 40).map((r, i) => ({ ...r, timestamp: i * 2000 }));
    const run = await fleet.run(trace);
    for (const [r, req] of run.records.map((r, i) => [r, trace[i]] as const)) {
      // Uncached tokens are at most the prompt: a short prompt is always below the threshold.
      if (req.inputLength < 8000) expect(r.modeReason).toBe('below_threshold');
      if (r.modeReason === 'above_cap') expect(req.inputLength).toBeGreaterThanOrEqual(30_000);
    }
    expect(run.router.modeReasons.below_threshold).toBeGreaterThan(0);
    expect(run.router.modeReasons.above_cap + run.router.modeReasons.remote_prefill_pays).toBeGreaterThan(0);
    expect(run.router.aggregated).toBe(run.router.modeReasons.below_threshold);
    expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
    expect(zero(fleet.prefillEngines!.routing.core.totals())).toBe(true);
  });
});

describe('engine priority scheduling in replay', () => {
  it('with the priority forwarded and the engines scheduling by it, the high class skips the engines’ queues too', async () => {
    // No router queue: every request waits in its engine, where only the forwarded priority counts.
    const run = (forward: boolean) =>
      aggregated({ highPriorityShare: 0.25, forwardPriority: forward, engine: { ...engine, schedulingPolicy: forward ? 'priority' : 'fcfs' } }).run(burst);
    const [fcfs, prio] = [await run(false), await run(true)];
    for (const r of [fcfs, prio]) expect(r.records.every((x) => Number.isFinite(x.finishMs) && !x.refused)).toBe(true);
    const highMean = (r: typeof fcfs) => mean(r.records.filter((x) => x.priority === 1).map(ttft));
    const lowMean = (r: typeof fcfs) => mean(r.records.filter((x) => x.priority === 0).map(ttft));
    // FCFS engines ignore the class; priority engines serve it first.
    expect(highMean(fcfs)).toBeGreaterThan(lowMean(fcfs) / 2);
    expect(highMean(prio)).toBeLessThan(lowMean(prio) / 2);
  });

  it('an engine that schedules fcfs refuses a forwarded non-zero priority (400, as vLLM): recorded as refused, nothing leaked', async () => {
    const fleet = aggregated({ highPriorityShare: 0.25, forwardPriority: true });
    const run = await fleet.run(burst.slice(0, 20));
    const high = run.records.filter((r) => r.priority === 1);
    expect(high.length).toBeGreaterThan(0);
    expect(high.every((r) => r.refused)).toBe(true);
    expect(run.records.filter((r) => r.priority === 0).every((r) => !r.refused && Number.isFinite(r.finishMs))).toBe(true);
    expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
  });
});
