// SMG's cache_aware and kvroute's kv in front of the same two instant engines, in interleaved
// rounds: requests per second and the router process's CPU per request with 64 streams in
// flight (closed loop), and the latency each router adds at a steady 500 req/s (routed minus
// direct at the same percentile, as bench/frontend/overhead.ts computes it), round after round
// with the order of the runs rotated.
import { overheadFromRounds, type OverheadRounds, type RoundLatencies } from '../../frontend/overhead.js';
import { machineCpuMicros, type MachineCpu } from '../../frontend/machine-cpu.js';
import { processCpuMicros } from '../../frontend/thread-cpu.js';
import { percentOf, shareText, snapshotThreads, threadShares, type ThreadShares, type ThreadsSnapshot } from '../../frontend/thread-shares.js';
import type { LoadResult } from '../../frontend/loadgen.js';
import type { World } from '../../frontend/world-process.js';

/** A router measured, with the request bodies it is sent. */
export interface Contender {
  name: string;
  url: string;
  pid: number;
  bodies: readonly string[];
  /** Which direct run (straight to an engine, same bodies) its added latency is measured against. */
  direct: string;
  /** The world it is driven from, when not the one measureThroughput is given (world-ab.ts compares worlds). */
  world?: World;
}

export interface DirectPath {
  name: string;
  url: string;
  bodies: readonly string[];
}

export interface FrontendSizes {
  rounds: number;
  closedRequests: number;
  warmupRequests: number;
  overheadRounds: number;
  overheadRequests: number;
}

export interface ThroughputRound {
  rps: number;
  cpuUsPerRequest?: number;
  /** Where the machine's CPU went during the round (Linux /proc), when it could be read. */
  machine?: RoundMachineCpu;
  /** Where the world's and the router's CPU went thread by thread, when /proc could be read. */
  threads?: RoundThreads;
  completed: number;
  failed: number;
  firstError?: string;
}

/** A closed-loop round's CPU, per request unless said: the whole machine, not only the router. */
export interface RoundMachineCpu {
  /** The world's process: the engines and the load generator. */
  worldUsPerRequest: number;
  /** Every core's busy time: the router, the world, the bench's driver and any other work. */
  busyUsPerRequest: number;
  /** Share of the machine's CPU time (all cores) left idle, 0-1. */
  idleShare: number;
  cores: number;
}

/** A closed-loop round's threads, in shares of one core over the round (thread-shares.ts). */
export interface RoundThreads {
  /** The world's process: roles `engine` (the instant engines' threads), `load` (the load generator's), and `other`. */
  world: ThreadShares;
  /** The router's process: role `main` (its main thread) and `other` (a Rust router's pool, GC and libuv helpers). */
  router: ThreadShares;
}

export interface AddedLatency extends OverheadRounds {
  rate_per_s: number;
  requests: number;
  failed: number;
  /** The router process's CPU per request at the steady rate. */
  cpu_us_per_request?: number;
}

export const CONCURRENCY = 64;
const CLOSED_MAX_MS = 15_000;
export const STEADY_RATE = 500;
/**
 * Requests at the steady rate sent to a router right before each of its measured steady-rate runs
 * (2 s). Between its runs a router sits idle while the others run (10-15 s), and V8 shrinks an
 * idle process's young generation: the first second or two of the next run then scavenged twice
 * as often (every ~40 ms instead of ~80 at 500 req/s, stage-probe.ts, 2026-11-28). In the fixed
 * cyclic order of the rounds the same run always came first after the idle time (kvroute's
 * text prompts, its token-id run right after on a warm router), so the whole "text scavenges
 * twice as often" difference was the run order's. Every measured run now starts warm.
 */
export const STEADY_WARMUP_REQUESTS = 1_000;
const PATH = '/v1/completions';

/** The i-th rotation of a list: round r starts with item r (mod length). */
export function rotated<T>(items: readonly T[], r: number): T[] {
  const k = items.length === 0 ? 0 : r % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function withCpu(pid: number, run: () => Promise<LoadResult>): Promise<{ r: LoadResult; cpuUs?: number }> {
  const before = processCpuMicros(pid);
  const r = await run();
  const after = processCpuMicros(pid);
  return { r, cpuUs: before !== undefined && after !== undefined ? after - before : undefined };
}

interface CpuSnapshot {
  world?: number;
  machine?: MachineCpu;
  worldThreads?: ThreadsSnapshot;
  routerThreads?: ThreadsSnapshot;
}

function cpuSnapshot(world: World, routerPid: number): CpuSnapshot {
  return {
    world: processCpuMicros(world.pid),
    machine: machineCpuMicros(),
    worldThreads: snapshotThreads(world.pid),
    routerThreads: snapshotThreads(routerPid),
  };
}

/** The world's and the router's threads between two snapshots; undefined where /proc could not be read. */
export function threadsOfRound(a: CpuSnapshot, b: CpuSnapshot, world: Pick<World, 'threads'>, routerPid: number): RoundThreads | undefined {
  if (!a.worldThreads || !b.worldThreads || !a.routerThreads || !b.routerThreads) return undefined;
  const w = threadShares(a.worldThreads, b.worldThreads, { engine: world.threads.engine, load: world.threads.load });
  const r = threadShares(a.routerThreads, b.routerThreads, { main: [routerPid] });
  return w && r ? { world: w, router: r } : undefined;
}

/** The machine's CPU between two snapshots, per request; undefined where /proc could not be read. */
export function machineCpuOfRound(a: CpuSnapshot, b: CpuSnapshot, requests: number): RoundMachineCpu | undefined {
  if (requests <= 0 || a.world === undefined || b.world === undefined || !a.machine || !b.machine) return undefined;
  const busy = b.machine.busyUs - a.machine.busyUs;
  const idle = b.machine.idleUs - a.machine.idleUs;
  return {
    worldUsPerRequest: (b.world - a.world) / requests,
    busyUsPerRequest: busy / requests,
    idleShare: busy + idle > 0 ? idle / (busy + idle) : 0,
    cores: b.machine.cores,
  };
}

/** A round's threads in a progress line: shares of a core. */
export function threadsLine(t: RoundThreads): string {
  const w = t.world;
  return `world engines ${shareText(w.engine)}${w.engine.threads > 1 ? ` (busiest ${percentOf(w.engine.busiest)})` : ''}, load ${shareText(w.load)}, other ${percentOf(w.other.share)}; router main ${shareText(t.router.main)}, other ${percentOf(t.router.other.share)} (busiest ${percentOf(t.router.other.busiest)})`;
}

/** The steady-rate runs' order in round r: rotated by r, reversed in odd rounds. */
export function steadyOrder<T>(items: readonly T[], r: number): T[] {
  const order = rotated(items, r);
  return r % 2 === 1 ? order.reverse() : order;
}

export async function measureThroughput(
  world: World,
  contenders: readonly Contender[],
  s: FrontendSizes,
  log: (line: string) => void,
): Promise<Record<string, ThroughputRound[]>> {
  // A request count or a time limit, whichever comes first: a slow router's round stays bounded.
  const closed = (c: Contender, requests: number) =>
    (c.world ?? world).load(
      { url: c.url, path: PATH, body: c.bodies[0], bodies: c.bodies, concurrency: CONCURRENCY, requests, maxMs: CLOSED_MAX_MS },
      { ownThread: true },
    );
  for (const c of contenders) await closed(c, s.warmupRequests);
  const out: Record<string, ThroughputRound[]> = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < s.rounds; round++) {
    for (const c of rotated(contenders, round)) {
      const w = c.world ?? world;
      const before = cpuSnapshot(w, c.pid);
      const { r, cpuUs } = await withCpu(c.pid, () => closed(c, s.closedRequests));
      const after = cpuSnapshot(w, c.pid);
      const machine = machineCpuOfRound(before, after, r.completed);
      const threads = threadsOfRound(before, after, w, c.pid);
      const t: ThroughputRound = {
        rps: r.rps,
        completed: r.completed,
        failed: r.failed,
        ...(cpuUs !== undefined && r.completed > 0 ? { cpuUsPerRequest: cpuUs / r.completed } : {}),
        ...(machine ? { machine } : {}),
        ...(threads ? { threads } : {}),
        ...(r.firstError ? { firstError: r.firstError } : {}),
      };
      out[c.name].push(t);
      const m = machine
        ? `, world ${Math.round(machine.worldUsPerRequest)} us, machine busy ${Math.round(machine.busyUsPerRequest)} us/request, idle ${Math.round(machine.idleShare * 100)}%`
        : '';
      log(
        `round ${round + 1}/${s.rounds} ${c.name}: ${Math.round(t.rps)} req/s, router CPU ${t.cpuUsPerRequest === undefined ? '?' : Math.round(t.cpuUsPerRequest)} us/request${m}${threads ? `; ${threadsLine(threads)}` : ''}${t.failed ? `, ${t.failed} failed (${t.firstError})` : ''}`,
      );
    }
  }
  return out;
}

export async function measureAddedLatency(
  world: World,
  contenders: readonly Contender[],
  directs: readonly DirectPath[],
  s: FrontendSizes,
  log: (line: string) => void,
): Promise<Record<string, AddedLatency>> {
  const open = (p: { url: string; bodies: readonly string[] }, requests: number) =>
    world.load(
      { url: p.url, path: PATH, body: p.bodies[0], bodies: p.bodies, concurrency: 32, requests, maxMs: requests * 2 + 10_000, ratePerS: STEADY_RATE },
      { ownThread: false },
    );
  const runs: Array<{ name: string; url: string; bodies: readonly string[]; pid?: number }> = [...directs, ...contenders];
  for (const p of runs) await open(p, Math.min(s.overheadRequests, 1_000));
  const latencies: Record<string, Float64Array[]> = Object.fromEntries(runs.map((p) => [p.name, []]));
  const cpu: Record<string, { us: number; requests: number }> = Object.fromEntries(contenders.map((c) => [c.name, { us: 0, requests: 0 }]));
  const failed: Record<string, number> = Object.fromEntries(contenders.map((c) => [c.name, 0]));
  for (let round = 0; round < s.overheadRounds; round++) {
    // Rotated, and reversed every other round: with rotation alone the runs keep one cyclic order,
    // so the same run always follows the same one (kvroute's token-id run its text run).
    for (const p of steadyOrder(runs, round)) {
      if (p.pid !== undefined) await open(p, STEADY_WARMUP_REQUESTS);
      const { r, cpuUs } =
        p.pid === undefined ? { r: await open(p, s.overheadRequests), cpuUs: undefined } : await withCpu(p.pid, () => open(p, s.overheadRequests));
      latencies[p.name].push(r.latenciesMs);
      if (p.name in cpu && cpuUs !== undefined) {
        cpu[p.name].us += cpuUs;
        cpu[p.name].requests += r.completed;
      }
      if (p.name in failed) failed[p.name] += r.failed;
    }
    log(`added latency round ${round + 1}/${s.overheadRounds} done`);
  }
  const out: Record<string, AddedLatency> = {};
  for (const c of contenders) {
    const rounds: RoundLatencies[] = latencies[c.name].map((routed, i) => ({ routed, direct: latencies[c.direct][i] }));
    const ov = overheadFromRounds(rounds);
    out[c.name] = {
      ...ov,
      rate_per_s: STEADY_RATE,
      requests: latencies[c.name].reduce((n, l) => n + l.length, 0),
      failed: failed[c.name],
      ...(cpu[c.name].requests > 0 ? { cpu_us_per_request: Math.round((cpu[c.name].us / cpu[c.name].requests) * 10) / 10 } : {}),
    };
    log(
      `${c.name}: added latency at ${STEADY_RATE} req/s p50 ${ov.overhead_p50_ms} ms, p99 ${ov.overhead_p99_ms} ms (rounds ${ov.round_overhead_p99_ms.join(', ')})`,
    );
  }
  return out;
}
