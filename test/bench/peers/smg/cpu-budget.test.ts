import { describe, expect, it } from 'vitest';
import type { ThroughputRound } from '../../../../bench/peers/smg/compare.js';
import { machineCpuOfRound } from '../../../../bench/peers/smg/compare.js';
import type { RoundThreads } from '../../../../bench/peers/smg/compare.js';
import { capacityBound, cpuBudget, cpuBudgetMarkdown, roundsBound, routerPlusWorldBound } from '../../../../bench/peers/smg/cpu-budget.js';

const round = (rps: number, router: number, world: number, busy: number, idleShare: number, threads?: RoundThreads): ThroughputRound => ({
  rps,
  cpuUsPerRequest: router,
  completed: 10_000,
  failed: 0,
  machine: { worldUsPerRequest: world, busyUsPerRequest: busy, idleShare, cores: 2 },
  ...(threads ? { threads } : {}),
});

/** One-thread roles: on a core `share`, waiting `waiting`. */
const one = (share: number, waiting = 0) => ({ share, waiting, busiest: share, busiestWaiting: waiting, threads: 1 });
const threads = (o: { main?: number; mainWait?: number; engine?: number; load?: number; routerOther?: number }): RoundThreads => ({
  world: { engine: one(o.engine ?? 0.3, 0.1), load: one(o.load ?? 0.3, 0.1), other: { ...one(0.05), threads: 8 } },
  router: { main: one(o.main ?? 0.5, o.mainWait ?? 0.05), other: { ...one(o.routerOther ?? 0.05), threads: 10 } },
});

describe('machineCpuOfRound', () => {
  it('divides the world and machine time of a round by its requests, and shares by wall time and the machine total', () => {
    const a = { world: 1_000_000, machine: { busyUs: 10_000_000, idleUs: 5_000_000, cores: 2 } };
    const b = { world: 1_600_000, machine: { busyUs: 13_600_000, idleUs: 5_400_000, cores: 2 } };
    expect(machineCpuOfRound(a, b, 10_000)).toEqual({ worldUsPerRequest: 60, busyUsPerRequest: 360, idleShare: 0.1, cores: 2 });
  });

  it('gives nothing without requests or without a reading', () => {
    const a = { world: 1, machine: { busyUs: 1, idleUs: 1, cores: 2 } };
    expect(machineCpuOfRound(a, a, 0)).toBeUndefined();
    expect(machineCpuOfRound(a, { ...a, world: undefined }, 10)).toBeUndefined();
    expect(machineCpuOfRound({ ...a, machine: undefined }, a, 10)).toBeUndefined();
  });
});

describe('cpuBudget', () => {
  it('takes the medians of the rounds with machine figures, the rest being busy time neither router nor world', () => {
    const b = cpuBudget([
      round(5000, 200, 150, 400, 0.02),
      round(5400, 190, 140, 380, 0.04),
      round(5200, 210, 160, 420, 0.03),
      { rps: 1, completed: 1, failed: 0 },
    ])!;
    expect(b).toEqual({ rps: 5200, routerUs: 200, worldUs: 150, restUs: 50, busyUs: 400, idleShare: 0.03, cores: 2 });
    expect(cpuBudget([{ rps: 1, completed: 1, failed: 0 }])).toBeUndefined();
    expect(routerPlusWorldBound(b, 1.5)).toBeCloseTo(233.33, 2);
    // 2 cores at 1.5 x 5,200 req/s: 2,000,000 us / 7,800 requests.
    expect(capacityBound(b, 1.5)).toBeCloseTo(256.41, 2);
  });

  it('states the bound when SMG saturated the machine', () => {
    const smg = cpuBudget([round(5000, 200, 150, 400, 0.02)])!;
    const kv = cpuBudget([round(5500, 150, 140, 320, 0.2)])!;
    const md = cpuBudgetMarkdown(
      [
        { label: 'SMG', budget: smg },
        { label: 'kvroute text', budget: kv },
      ],
      smg,
      1.5,
    );
    expect(md).toContain('| SMG | 5000 | 200 | 150 | 50 | 400 | 2% |');
    expect(md).toContain('| kvroute text | 5500 | 150 | 140 | 30 | 320 | 20% |');
    expect(md).toContain('the machine was saturated');
    expect(md).toContain('(200 + 150) / 1.5 = **233 us**');
    expect(md).toContain("kvroute's: 290 us (kvroute text)");
    expect(md).toContain('leaves its router at most 93.3 us (kvroute text, against 150)');
    expect(md).not.toContain('Thread by thread'); // rounds without thread figures
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

describe('the rounds thread by thread', () => {
  it('takes the medians of each role over the rounds', () => {
    const b = cpuBudget([
      round(5000, 150, 90, 250, 0.2, threads({ main: 0.8 })),
      round(5100, 150, 90, 250, 0.2, threads({ main: 0.9 })),
      round(5200, 150, 90, 250, 0.2, threads({ main: 0.85 })),
    ])!;
    expect(b.threads!.routerMain).toEqual({ share: 0.85, waiting: 0.05, busiest: 0.85, busiestWaiting: 0.05, threads: 1 });
    expect(b.threads!.worldOther.threads).toBe(8);
  });

  it('names the thread that had work all the round, else the saturated machine, else latency x concurrency', () => {
    const budget = (idle: number, t: RoundThreads) => cpuBudget([round(5000, 150, 90, 250, idle, t)])!;
    // On a core 88% and waiting 7%: the main thread had work 95% of the round.
    expect(roundsBound(budget(0.18, threads({ main: 0.88, mainWait: 0.07 })))).toEqual({ kind: 'thread', thread: "the router's main thread", busy: 0.95 });
    // The world's load generator full: the world bounds the rounds, whatever the router.
    expect(roundsBound(budget(0.18, threads({ load: 0.85 })))).toMatchObject({ kind: 'thread', thread: "the world's load-generator thread" });
    // On a saturated machine every thread waits: a pool thread at 65% + 30% waiting is not the bound, the cores are.
    expect(roundsBound(budget(0.04, { ...threads({}), router: { main: one(0), other: { ...one(0.65, 0.3), threads: 10 } } }))).toEqual({ kind: 'machine' });
    expect(roundsBound(budget(0.04, threads({ main: 0.93, mainWait: 0.05 })))).toEqual({ kind: 'thread', thread: "the router's main thread", busy: 0.93 });
    expect(roundsBound(budget(0.3, threads({})))).toEqual({ kind: 'latency' });
    expect(roundsBound(cpuBudget([round(5000, 150, 90, 250, 0.3)])!)).toBeUndefined();
  });

  it('tables each part of the world and the router, and what bounded each router', () => {
    const smg = cpuBudget([round(6000, 200, 95, 300, 0.04, threads({ main: 0, mainWait: 0, routerOther: 0.64 }))])!;
    const kv = cpuBudget([round(7000, 135, 90, 230, 0.17, threads({ main: 0.9, mainWait: 0.06 }))])!;
    const md = cpuBudgetMarkdown(
      [
        { label: 'SMG', budget: smg },
        { label: 'kvroute text', budget: kv },
      ],
      smg,
      1.5,
    );
    expect(md).toContain('**Thread by thread**');
    expect(md).toContain(
      "| SMG | 30% +10% waiting | 30% +10% waiting | 5% +0% waiting | 0% +0% waiting | 64% +0% waiting (busiest 64%) | the machine's cores (4% idle), no thread on a core 90% of the round |",
    );
    expect(md).toContain(
      "| kvroute text | 30% +10% waiting | 30% +10% waiting | 5% +0% waiting | 90% +6% waiting | 5% +0% waiting (busiest 5%) | the router's main thread (work 96% of the round) |",
    );
    // 0.9 of a core at 7,000 req/s: 129 us per request on the main thread, against 1,000,000 / (1.5 x 6,000) = 111 us.
    expect(md).toContain(
      "1.5x SMG's req/s needs at most one core / that rate = **111 us** per request on that thread (and a core of its own all the time); it took 129 us (kvroute text).",
    );
  });
});
