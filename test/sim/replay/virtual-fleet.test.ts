// Replay runs the live PrefillRouter over the virtual transport: the decode-availability check,
// query-then-book, the fallback and the three handoffs, in virtual time.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RoutingTotals } from '../../../src/core/routing-core.js';
import type { EngineKind } from '../../../src/engines/types.js';
import { runReplay, type ReplayReport } from '../../../src/sim/replay/replay.js';
import { loadTrace, type TraceRequest } from '../../../src/sim/replay/trace.js';
import { VirtualFleet, type VirtualFleetOptions } from '../../../src/sim/replay/virtual-fleet.js';

const tracePath = fileURLToPath(new URL('../../../traces/synthetic_trace.jsonl', import.meta.url));
let slice: TraceRequest[];

beforeAll(async () => {
  slice = (await loadTrace(tracePath)).slice(0, 60);
});

const engine = { blockSize: 16, kvBlocks: 8192 };
const disaggregated = (o: Partial<VirtualFleetOptions> = {}): VirtualFleet =>
  new VirtualFleet({ workers: 0, disaggregated: { prefill: 2, decode: 2 }, policy: 'kv', engine, seed: 1, arrivalScale: 1, ...o });

const zero = (t: RoutingTotals) => t.requests === 0 && t.prefillTokens === 0 && t.decodeBlocks === 0;

function expectAllBookingsFreed(fleet: VirtualFleet): void {
  expect(zero(fleet.prefillEngines!.routing.core.totals())).toBe(true);
  expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
  for (const e of fleet.prefillEngines!.engines) expect(e.metrics().heldRequests).toBe(0);
  expect(fleet.transport.stats().openHandoffs).toBe(0);
}

const withoutWallTimes = (r: ReplayReport) => JSON.parse(JSON.stringify(r, (k, v) => (k === 'wall_s' || k === 'simulated_to_wall' ? undefined : v)));

describe.each<EngineKind>(['vllm', 'sglang', 'trtllm'])('disaggregated replay, %s handoff', (handoff) => {
  it('completes every request, each decode receiving its prompt by KV transfer, and frees every booking', async () => {
    const fleet = disaggregated({ handoff });
    const run = await fleet.run(slice);
    for (const [i, r] of run.records.entries()) {
      expect(r.refused).toBe(false);
      expect(r.firstTokenMs).toBeGreaterThan(r.arrivalMs);
      expect(r.finishMs).toBeGreaterThanOrEqual(r.firstTokenMs);
      expect(r.outputTokens).toBe(slice[i].outputLength);
      expect([2, 3]).toContain(r.worker); // the decode workers' ids follow the prefill workers'
    }
    expect(run.router).toMatchObject({ requests: 60, disaggregated: 60, aggregated: 0, fallbacks: 0 });
    // One prefill token per request on the prefill engines; every decode pulled its prefill's KV.
    expect(fleet.prefillEngines!.engines.reduce((n, e) => n + e.metrics().generatedTokens, 0)).toBe(60);
    expect(fleet.transport.stats()).toMatchObject({ kvPulled: 60, kvRecomputed: 0 });
    expectAllBookingsFreed(fleet);
  });

  it('is reproducible: the same seed gives the same report', async () => {
    const cfg = {
      trace: slice,
      traceName: 'synthetic_trace.jsonl',
      workers: 0,
      disaggregated: { prefill: 2, decode: 1 },
      handoff,
      policies: ['kv', 'random'] as const,
      blockSize: 16,
      kvBlocks: 8192,
      arrivalScale: 2,
      seed: 3,
    };
    const a = await runReplay(cfg);
    const b = await runReplay(cfg);
    expect(withoutWallTimes(a)).toEqual(withoutWallTimes(b));
    expect(a).toMatchObject({ prefill_workers: 2, decode_workers: 1, handoff });
    expect(a.policies.kv.completed).toBe(60);
  });
});

describe('disaggregated replay, the router around the handoff', () => {
  it('checks decode availability first: with no decode worker to serve, every request is refused and no prefill runs', async () => {
    const fleet = disaggregated();
    for (const w of fleet.router.decode.pool.workers()) fleet.router.decode.pool.setHealthy(w.id, false);
    const run = await fleet.run(slice.slice(0, 20));
    expect(run.records.every((r) => r.refused)).toBe(true);
    for (const e of fleet.prefillEngines!.engines) expect(e.metrics()).toMatchObject({ steps: 0, promptTokens: 0 });
    expect(fleet.transport.stats().legs).toBe(0);
    expectAllBookingsFreed(fleet);
  });

  it('falls back to aggregated serving when a prefill fails, counted, and completes the request', async () => {
    const fleet = disaggregated();
    fleet.transport.failNext(0, 2);
    fleet.transport.failNext(1, 2);
    const run = await fleet.run(slice.slice(0, 30));
    expect(run.router).toMatchObject({ requests: 30, fallbacks: 4 });
    expect(fleet.transport.stats()).toMatchObject({ injectedFailures: 4, kvPulled: 26 });
    expect(run.records.every((r) => Number.isFinite(r.finishMs) && !r.refused)).toBe(true);
    expectAllBookingsFreed(fleet);
  });

  it('peeks the prefill worker before booking it: round robin alternates, the peek never advances the rotation', async () => {
    const fleet = disaggregated({ policy: 'round_robin' });
    await fleet.run(slice.slice(0, 40));
    expect(fleet.prefillEngines!.engines.map((e) => e.metrics().generatedTokens)).toEqual([20, 20]);
  });
});

describe('replay with a worker down', () => {
  it.each<EngineKind>(['vllm', 'sglang', 'trtllm'])(
    'fails the %s legs refused by a down worker over to the others: every request completes, no fallback',
    async (handoff) => {
      // Prefill worker 0 and decode worker 2 refuse every leg for the whole run.
      const fleet = disaggregated({ handoff, down: [{ worker: 0 }, { worker: 2 }] });
      const run = await fleet.run(slice.slice(0, 30));
      expect(run.records.every((r) => Number.isFinite(r.finishMs) && !r.refused && r.worker === 3)).toBe(true);
      expect(run.router).toMatchObject({ requests: 30, disaggregated: 30, fallbacks: 0 });
      const refused = fleet.transport.stats().refusedLegs;
      expect(refused).toBeGreaterThan(0);
      expect(fleet.router.prefill.stats().retries + fleet.router.decode.stats().retries).toBe(refused);
      expect(fleet.prefillEngines!.engines[0].metrics().steps).toBe(0);
      expect(fleet.decodeEngines.engines[0].metrics().steps).toBe(0);
      expectAllBookingsFreed(fleet);
    },
  );

  it('with ejection in virtual time, a worker down for a span is refused once, ejected, and serves again after', async () => {
    const fleet = new VirtualFleet({
      workers: 3,
      policy: 'round_robin',
      engine,
      seed: 1,
      arrivalScale: 1,
      down: [{ worker: 1, fromMs: 0, toMs: 5_000 }],
      outlierDetection: { baseEjectionTimeMs: 10_000 },
    });
    const run = await fleet.run(slice);
    expect(fleet.transport.stats().refusedLegs).toBe(1);
    expect(fleet.router.decode.stats().retries).toBe(1);
    expect(fleet.router.decode.pool.state(1).outlier).toMatchObject({ ejections: 1, lastEjectionReason: 'connect_failure' });
    // Back after its ejection ended (virtual time 10 s on): round robin gives it requests again.
    const late = run.records.filter((r) => r.arrivalMs >= 10_000);
    expect(late.length).toBeGreaterThan(0);
    expect(late.some((r) => r.worker === 1)).toBe(true);
    expect(run.records.every((r) => Number.isFinite(r.finishMs))).toBe(true);
  });

  it('leaves the figures unchanged when no fault is injected (the failover seam costs nothing)', async () => {
    const cfg = {
      trace: slice,
      traceName: 't',
      workers: 0,
      disaggregated: { prefill: 2, decode: 2 },
      handoff: 'sglang' as const,
      policies: ['kv'] as const,
      blockSize: 16,
      kvBlocks: 8192,
      arrivalScale: 2,
      seed: 3,
    };
    const plain = await runReplay(cfg);
    const healthy = await runReplay({ ...cfg, faults: { down: [], outlierDetection: {} } });
    expect(withoutWallTimes(healthy)).toEqual(withoutWallTimes(plain));
  });
});

describe('aggregated replay', () => {
  it('goes through the PrefillRouter too: every request passed through to the decode pool', async () => {
    const fleet = new VirtualFleet({ workers: 3, policy: 'kv', engine, seed: 1, arrivalScale: 1 });
    const run = await fleet.run(slice);
    expect(run.router).toMatchObject({ requests: 60, aggregated: 60, disaggregated: 0 });
    expect(run.records.every((r) => Number.isFinite(r.finishMs) && r.worker >= 0 && r.worker < 3)).toBe(true);
    expect(zero(fleet.decodeEngines.routing.core.totals())).toBe(true);
    expect(fleet.prefillEngines).toBeUndefined();
  });

  it('replays one trace per fleet', async () => {
    const fleet = new VirtualFleet({ workers: 1, policy: 'kv', engine, seed: 1, arrivalScale: 1 });
    await fleet.run(slice.slice(0, 2));
    await expect(fleet.run(slice.slice(0, 2))).rejects.toThrow(/one trace/);
  });
});
