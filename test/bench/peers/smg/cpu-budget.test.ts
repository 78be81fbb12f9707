import { describe, expect, it } from 'vitest';
import type { ThroughputRound } from '../../../../bench/peers/smg/compare.js';
import { machineCpuOfRound } from '../../../../bench/peers/smg/compare.js';
import { capacityBound, cpuBudget, cpuBudgetMarkdown, routerPlusWorldBound } from '../../../../bench/peers/smg/cpu-budget.js';

const round = (rps: number, router: number, world: number, busy: number, idleShare: number, mainThread = 0.8): ThroughputRound => ({
  rps,
  cpuUsPerRequest: router,
  completed: 10_000,
  failed: 0,
  machine: { worldUsPerRequest: world, busyUsPerRequest: busy, idleShare, routerMainThreadShare: mainThread, cores: 2 },
});

describe('machineCpuOfRound', () => {
  it('divides the world and machine time of a round by its requests, and shares by wall time and the machine total', () => {
    const a = { at: 0, world: 1_000_000, machine: { busyUs: 10_000_000, idleUs: 5_000_000, cores: 2 }, mainThread: 2_000_000 };
    const b = { at: 2_000, world: 1_600_000, machine: { busyUs: 13_600_000, idleUs: 5_400_000, cores: 2 }, mainThread: 3_600_000 };
    expect(machineCpuOfRound(a, b, 10_000)).toEqual({ worldUsPerRequest: 60, busyUsPerRequest: 360, idleShare: 0.1, routerMainThreadShare: 0.8, cores: 2 });
  });

  it('gives nothing without requests or without a reading', () => {
    const a = { at: 0, world: 1, machine: { busyUs: 1, idleUs: 1, cores: 2 }, mainThread: 1 };
    expect(machineCpuOfRound(a, { ...a, at: 10 }, 0)).toBeUndefined();
    expect(machineCpuOfRound(a, { ...a, world: undefined }, 10)).toBeUndefined();
    expect(machineCpuOfRound({ ...a, machine: undefined }, a, 10)).toBeUndefined();
    expect(machineCpuOfRound(a, { ...a, mainThread: undefined }, 10)).toBeUndefined();
  });
});

describe('cpuBudget', () => {
  it('takes the medians of the rounds with machine figures, the rest being busy time neither router nor world', () => {
    const b = cpuBudget([round(5000, 200, 150, 400, 0.02), round(5400, 190, 140, 380, 0.04), round(5200, 210, 160, 420, 0.03), { rps: 1, completed: 1, failed: 0 }])!;
    expect(b).toEqual({ rps: 5200, routerUs: 200, worldUs: 150, restUs: 50, busyUs: 400, idleShare: 0.03, routerMainThreadShare: 0.8, cores: 2 });
    expect(cpuBudget([{ rps: 1, completed: 1, failed: 0 }])).toBeUndefined();
    expect(routerPlusWorldBound(b, 1.5)).toBeCloseTo(233.33, 2);
    // 2 cores at 1.5 x 5,200 req/s: 2,000,000 us / 7,800 requests.
    expect(capacityBound(b, 1.5)).toBeCloseTo(256.41, 2);
  });

  it('states the bound when SMG saturated the machine, and a thread bound when kvroute left cores idle', () => {
    const smg = cpuBudget([round(5000, 200, 150, 400, 0.02)])!;
    const kv = cpuBudget([round(5500, 150, 140, 320, 0.2, 0.97)])!;
    const md = cpuBudgetMarkdown([{ label: 'SMG', budget: smg }, { label: 'kvroute text', budget: kv }], smg, 1.5);
    expect(md).toContain('| SMG | 5000 | 200 | 150 | 50 | 400 | 2% | - |');
    expect(md).toContain('| kvroute text | 5500 | 150 | 140 | 30 | 320 | 20% | 97% |');
    expect(md).toContain('the machine was saturated');
    expect(md).toContain('(200 + 150) / 1.5 = **233 us**');
    expect(md).toContain("kvroute's: 290 us (kvroute text)");
    expect(md).toContain('leaves its router at most 93.3 us (kvroute text, against 150)');
    expect(md).toContain("kvroute text kept the router's main thread busy");
  });

  it('does not claim a CPU bound when SMG left the machine idle', () => {
    const smg = cpuBudget([round(5000, 200, 150, 400, 0.3)])!;
    const md = cpuBudgetMarkdown([{ label: 'SMG', budget: smg }], smg, 1.5);
    expect(md).toContain("SMG's rounds left 30% of the 2 cores idle: the machine's CPU did not bound them.");
    expect(md).not.toContain('saturated');
    // 1.5 x 5,000 req/s on 2 cores: 266.7 us per request for router and world together.
    expect(md).toContain("1.5x SMG's req/s (7500) leaves at most 2 cores / that rate = **267 us**");
  });
});
