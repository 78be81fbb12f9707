// The frontend benchmark's two measurements: a closed loop (requests in flight, as fast as the
// router answers) with the router thread's CPU over it, and the router's overhead at a fixed rate
// from alternating rounds of direct and routed runs (overhead.ts).
import type { ArrivalProcess } from './arrivals.js';
import { recordGcPauses, type GcPauses } from './gc-pauses.js';
import type { LoadOptions, LoadResult } from './loadgen.js';
import { overheadFromRounds, type OverheadRounds, type RoundLatencies } from './overhead.js';
import { threadCpuMicros } from './thread-cpu.js';
import type { World } from './world-process.js';

export interface OverheadMeasure extends OverheadRounds {
  rate_per_s: number;
  /** How sends were spaced: evenly (the target's load) or as a Poisson process. */
  arrivals: ArrivalProcess;
  /** Routed requests over all rounds. */
  requests: number;
  /** The router process's GC pauses over the rounds (direct runs included: the router idles then). */
  router_gc: GcPauses;
}

const OVERHEAD_RATE_PER_S = 1000;

/**
 * Router overhead at a fixed rate (default 1,000 req/s): alternating rounds of direct and routed
 * runs (see overhead.ts), the load generator on the engine's thread, after an open-loop warm-up of
 * both paths.
 */
export async function measureOverhead(
  world: World,
  o: { routedUrl: string; engineUrl: string; body: string; arrivals: ArrivalProcess; requests: number; rounds: number; warmup: number; ratePerS?: number },
): Promise<OverheadMeasure> {
  const rate = o.ratePerS ?? OVERHEAD_RATE_PER_S;
  const common = { path: '/v1/completions', body: o.body, concurrency: 32, maxMs: (o.requests * 1000) / rate + 5_000, ratePerS: rate, arrivals: o.arrivals };
  const perRound = Math.ceil(o.requests / o.rounds);
  const run = (url: string, requests = perRound) => world.load({ ...common, requests, url }, { ownThread: false });
  // Warm the open-loop code on the engine's thread (the closed loop ran on another thread).
  await run(o.engineUrl, o.warmup);
  await run(o.routedUrl, o.warmup);
  const gc = recordGcPauses();
  const rounds: RoundLatencies[] = [];
  let routedCompleted = 0;
  for (let i = 0; i < o.rounds; i++) {
    // Alternate which path goes first, so neither always meets the machine right after the other.
    let direct: LoadResult;
    let routed: LoadResult;
    if (i % 2 === 0) {
      direct = await run(o.engineUrl);
      routed = await run(o.routedUrl);
    } else {
      routed = await run(o.routedUrl);
      direct = await run(o.engineUrl);
    }
    rounds.push({ direct: direct.latenciesMs, routed: routed.latenciesMs });
    routedCompleted += routed.completed;
  }
  return { rate_per_s: rate, arrivals: o.arrivals, requests: routedCompleted, ...overheadFromRounds(rounds), router_gc: gc.stop() };
}

export function closedLoop(world: World, opts: LoadOptions): Promise<LoadResult> {
  return world.load(opts, { ownThread: true });
}

/** A closed loop, with the router thread's CPU per completed request over it (Linux; else undefined). */
export async function closedLoopWithCpu(world: World, opts: LoadOptions): Promise<{ r: LoadResult; cpuPerRequest?: number }> {
  const before = threadCpuMicros();
  const r = await closedLoop(world, opts);
  const after = threadCpuMicros();
  return { r, cpuPerRequest: before !== undefined && after !== undefined && r.completed > 0 ? (after - before) / r.completed : undefined };
}
