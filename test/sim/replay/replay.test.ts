import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { replayMarkdown } from '../../../src/sim/replay/markdown.js';
import { REPLAY_POLICIES } from '../../../src/sim/replay/policies.js';
import { runReplay, type ReplayReport } from '../../../src/sim/replay/replay.js';
import { loadTrace, type TraceRequest } from '../../../src/sim/replay/trace.js';

const tracePath = fileURLToPath(new URL('../../../traces/synthetic_trace.jsonl', import.meta.url));
let slice: TraceRequest[];

beforeAll(async () => {
  slice = (await loadTrace(tracePath)).slice(0, 150);
});

const withoutWallTimes = (r: ReplayReport) => JSON.parse(JSON.stringify(r, (k, v) => (k === 'wall_s' || k === 'simulated_to_wall' ? undefined : v)));

describe('runReplay', () => {
  const base = { traceName: 'synthetic_trace.jsonl', workers: 3, blockSize: 16, kvBlocks: 8192, arrivalScale: 2, seed: 7 };

  it('reports every policy in the documented JSON shape', async () => {
    const report = await runReplay({ ...base, trace: slice, policies: REPLAY_POLICIES });
    expect(Object.keys(report.policies)).toEqual([...REPLAY_POLICIES]);
    for (const p of Object.values(report.policies)) {
      expect(p.completed + p.refused).toBe(150);
      expect(p.ttft_ms.p50).toBeGreaterThan(0);
      expect(p.ttft_ms.p50).toBeLessThanOrEqual(p.ttft_ms.p90);
      expect(p.ttft_ms.p90).toBeLessThanOrEqual(p.ttft_ms.p99);
      expect(p.itl_ms.p50).toBeGreaterThan(0);
      expect(p.e2e_ms.p50).toBeGreaterThan(p.ttft_ms.p50);
      expect(p.hit_rate).toBeGreaterThanOrEqual(0);
      expect(p.hit_rate).toBeLessThan(1);
      expect(p.throughput_rps).toBeGreaterThan(0);
    }
    expect(report).toMatchObject({ trace: 'synthetic_trace.jsonl', seed: 7, requests: 150 });
    expect(report.hit_rate_bound).toBeGreaterThan(0);
    expect(report.simulated_s).toBeGreaterThan(0);
    expect(replayMarkdown(report)).toContain('| kv_approx |');
  });

  it('is reproducible: the same seed gives the same figures', async () => {
    const a = await runReplay({ ...base, trace: slice, policies: ['random', 'kv'] });
    const b = await runReplay({ ...base, trace: slice, policies: ['random', 'kv'] });
    expect(withoutWallTimes(a)).toEqual(withoutWallTimes(b));
    const c = await runReplay({ ...base, seed: 8, trace: slice, policies: ['random'] });
    expect(c.policies.random).not.toEqual(a.policies.random);
  });

  it('routes shared prefixes to the worker holding them: kv hits more than round robin', async () => {
    const report = await runReplay({ ...base, trace: slice, policies: ['round_robin', 'kv'] });
    expect(report.policies.kv.hit_rate).toBeGreaterThan(report.policies.round_robin.hit_rate);
  });

  it('applies routing settings over every policy (a kv weight of a sweep)', async () => {
    const plain = await runReplay({ ...base, trace: slice, policies: ['kv', 'kv_ttft'] });
    const weighted = await runReplay({ ...base, trace: slice, policies: ['kv'], routing: { prefillLoadScale: 16 } });
    // kv at prefillLoadScale 16 is the kv_ttft preset, decision for decision.
    expect(withoutWallTimes(weighted).policies.kv).toEqual(withoutWallTimes(plain).policies.kv_ttft);
    expect(weighted.policies.kv).not.toEqual(plain.policies.kv);
  });

  it('runs a load sweep until every policy saturates', async () => {
    const report = await runReplay({ ...base, trace: slice.slice(0, 80), policies: ['kv'], sweepScales: [2, 4, 8, 16, 32, 64, 128, 256] });
    const sweep = report.sweep!;
    expect(sweep[0].scale).toBe(2);
    expect(sweep[1].offered_rps).toBeCloseTo(sweep[0].offered_rps * 2, 1);
    expect(sweep.length).toBeGreaterThan(1);
    // The sweep ends at the first load where every policy saturates, or at its largest load.
    expect(sweep.at(-1)!.policies.kv.saturated || sweep.length === 8).toBe(true);
    expect(sweep.slice(0, -1).every((p) => !p.policies.kv.saturated)).toBe(true);
    expect(sweep.at(-1)!.policies.kv.ttft_p90_ms).toBeGreaterThan(sweep[0].policies.kv.ttft_p90_ms);
  });
});

describe('sweepLoads', () => {
  it('steps geometrically, three points per doubling, up to the maximum', async () => {
    const { sweepLoads } = await import('../../../src/sim/replay/replay.js');
    expect(sweepLoads(1, 4)).toEqual([1, 1.26, 1.59, 2, 2.52, 3.17, 4]);
    expect(sweepLoads(2, 2)).toEqual([2]);
  });
});
