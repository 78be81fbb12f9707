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
export async function measureOverhead(world: World, o: OverheadOptions & { body: string }): Promise<OverheadMeasure> {
  const [measured] = await measureOverheads(world, { ...o, bodies: [o.body] });
  return measured;
}

export interface OverheadOptions {
  routedUrl: string;
  engineUrl: string;
  arrivals: ArrivalProcess;
  /** Routed requests per body over all rounds. */
  requests: number;
  rounds: number;
  warmup: number;
  ratePerS?: number;
}

/**
 * The overhead of several request bodies (the same prompt in different forms) measured in the same
 * rounds: each round runs every body (direct and routed, in an order that rotates from round to
 * round), so a stretch of the shared machine's other work moves one round of each, not one body.
 */
export async function measureOverheads(world: World, o: OverheadOptions & { bodies: readonly string[] }): Promise<OverheadMeasure[]> {
  const rate = o.ratePerS ?? OVERHEAD_RATE_PER_S;
  const perRound = Math.ceil(o.requests / o.rounds);
  const run = (body: string, url: string, requests = perRound) =>
    world.load(
      { path: '/v1/completions', body, concurrency: 32, maxMs: (requests * 1000) / rate + 5_000, ratePerS: rate, arrivals: o.arrivals, requests, url },
      { ownThread: false },
    );
  // Warm the open-loop code on the engine's thread (the closed loop ran on another thread).
  for (const body of o.bodies) {
    await run(body, o.engineUrl, o.warmup);
    await run(body, o.routedUrl, o.warmup);
  }
  const gc = recordGcPauses();
  const rounds: RoundLatencies[][] = o.bodies.map(() => []);
  const routedCompleted = o.bodies.map(() => 0);
  for (let i = 0; i < o.rounds; i++) {
    for (let k = 0; k < o.bodies.length; k++) {
      const b = (k + i) % o.bodies.length;
      // Alternate which path goes first, so neither always meets the machine right after the other.
      let direct: LoadResult;
      let routed: LoadResult;
      if (i % 2 === 0) {
        direct = await run(o.bodies[b], o.engineUrl);
        routed = await run(o.bodies[b], o.routedUrl);
      } else {
        routed = await run(o.bodies[b], o.routedUrl);
        direct = await run(o.bodies[b], o.engineUrl);
      }
      rounds[b].push({ direct: direct.latenciesMs, routed: routed.latenciesMs });
      routedCompleted[b] += routed.completed;
    }
  }
  const routerGc = gc.stop();
  return o.bodies.map((_, b) => ({
    rate_per_s: rate,
    arrivals: o.arrivals,
    requests: routedCompleted[b],
    ...overheadFromRounds(rounds[b]),
    router_gc: routerGc,
  }));
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
