// Where the machine's CPU went in the closed-loop rounds, and what that makes of the 1.5x req/s
// target: on a machine SMG's rounds keep busy, requests per second are the cores' time over the CPU
// every process spends per request, so 1.5x SMG's needs kvroute's router + world CPU per request
// at most (SMG's router + world) / 1.5; with cores left idle, a router thread is the bound instead.
// Thread by thread (the world's engines and load generator, the router's main thread and the rest)
// the rounds show which of these bounds each router: a thread that had work all the round (on a
// core or waiting for one), the machine's cores, or neither (latency x concurrency).
import { percentOf, shareText, type RoleShare } from '../../frontend/thread-shares.js';
import { formatNumber } from '../../lib/format.js';
import { median } from '../../lib/stats.js';
import type { RoundThreads, ThroughputRound } from './compare.js';

/** Medians over a contender's rounds, per request unless said. */
export interface CpuBudget {
  rps: number;
  routerUs: number;
  worldUs: number;
  /** The machine's busy time that was neither the router's nor the world's (the bench driver, other work). */
  restUs: number;
  busyUs: number;
  idleShare: number;
  cores: number;
  /** Medians of the rounds' thread shares, when the rounds have them. */
  threads?: ThreadBudget;
}

/** Each part's threads, medians of rounds (shares of one core; thread-shares.ts). */
export interface ThreadBudget {
  worldEngines: RoleShare;
  worldLoad: RoleShare;
  worldOther: RoleShare;
  routerMain: RoleShare;
  routerOther: RoleShare;
}

/** A thread that had work (on a core or waiting for one) this share of a round or more bounds it. */
export const SATURATED_THREAD = 0.9;

/** Below this share of idle machine time a round counts as saturating the machine. */
export const SATURATED_IDLE_SHARE = 0.1;

/** The medians of the rounds that have machine figures; undefined when none has. */
export function cpuBudget(rounds: readonly ThroughputRound[]): CpuBudget | undefined {
  const measured = rounds.filter((r) => r.machine !== undefined && r.cpuUsPerRequest !== undefined);
  if (measured.length === 0) return undefined;
  const med = (f: (r: ThroughputRound) => number) => median(measured.map(f));
  return {
    rps: med((r) => r.rps),
    routerUs: med((r) => r.cpuUsPerRequest!),
    worldUs: med((r) => r.machine!.worldUsPerRequest),
    restUs: med((r) => r.machine!.busyUsPerRequest - r.cpuUsPerRequest! - r.machine!.worldUsPerRequest),
    busyUs: med((r) => r.machine!.busyUsPerRequest),
    idleShare: med((r) => r.machine!.idleShare),
    cores: measured[0].machine!.cores,
    ...threadBudget(measured),
  };
}

function threadBudget(rounds: readonly ThroughputRound[]): { threads: ThreadBudget } | undefined {
  const seen = rounds.map((r) => r.threads).filter((t): t is RoundThreads => t !== undefined);
  if (seen.length === 0) return undefined;
  const role = (f: (t: RoundThreads) => RoleShare): RoleShare => {
    const all = seen.map(f);
    const med = (g: (r: RoleShare) => number | undefined) => {
      const xs = all.map(g).filter((x): x is number => x !== undefined);
      return xs.length === all.length ? median(xs) : undefined;
    };
    const [waiting, busiestWaiting] = [med((r) => r.waiting), med((r) => r.busiestWaiting)];
    return {
      share: med((r) => r.share)!,
      ...(waiting === undefined ? {} : { waiting }),
      busiest: med((r) => r.busiest)!,
      ...(busiestWaiting === undefined ? {} : { busiestWaiting }),
      threads: Math.max(...all.map((r) => r.threads)),
    };
  };
  return {
    threads: {
      worldEngines: role((t) => t.world.engine),
      worldLoad: role((t) => t.world.load),
      worldOther: role((t) => t.world.other),
      routerMain: role((t) => t.router.main),
      routerOther: role((t) => t.router.other),
    },
  };
}

/** What bounded a contender's rounds: a thread with work all the round, the machine's cores, or neither. */
export type RoundsBound = { kind: 'thread'; thread: string; busy: number } | { kind: 'machine' } | { kind: 'latency' };

/**
 * With cores left idle, the thread with the most work (on a core or waiting for one) when that is
 * SATURATED_THREAD of the rounds or more, else latency x concurrency. On a saturated machine every
 * runnable thread waits for a core, so there a thread counts only when it was on a core that long
 * itself; else the machine's cores bound the rounds.
 */
export function roundsBound(b: CpuBudget): RoundsBound | undefined {
  const t = b.threads;
  if (!t) return undefined;
  const saturated = b.idleShare < SATURATED_IDLE_SHARE;
  const busy = (r: RoleShare) => r.busiest + (saturated ? 0 : (r.busiestWaiting ?? 0));
  const candidates: Array<[string, RoleShare]> = [
    ["the router's main thread", t.routerMain],
    ["the router's busiest other thread", t.routerOther],
    [t.worldEngines.threads > 1 ? "the world's busiest engine thread" : "the world's engine thread", t.worldEngines],
    ["the world's load-generator thread", t.worldLoad],
  ];
  const [thread, role] = candidates.reduce((a, c) => (busy(c[1]) > busy(a[1]) ? c : a));
  if (busy(role) >= SATURATED_THREAD) return { kind: 'thread', thread, busy: busy(role) };
  return saturated ? { kind: 'machine' } : { kind: 'latency' };
}

function boundText(b: CpuBudget): string {
  const bound = roundsBound(b);
  if (!bound) return 'n/a';
  if (bound.kind === 'thread')
    return b.idleShare < SATURATED_IDLE_SHARE
      ? `${bound.thread} (on a core ${percentOf(bound.busy)} of the round), on a saturated machine`
      : `${bound.thread} (work ${percentOf(bound.busy)} of the round)`;
  if (bound.kind === 'machine') return `the machine's cores (${percentOf(b.idleShare)} idle), no thread on a core ${percentOf(SATURATED_THREAD)} of the round`;
  return 'latency x concurrency: no thread full, cores idle';
}

/** kvroute's router + world CPU per request that `ratio` times the reference's req/s allows on a saturated machine. */
export function routerPlusWorldBound(reference: CpuBudget, ratio: number): number {
  return (reference.routerUs + reference.worldUs) / ratio;
}

/**
 * The CPU per request, router and world together, that `ratio` times the reference's req/s leaves
 * on this machine whatever else holds: its cores' time per second over that many requests.
 */
export function capacityBound(reference: CpuBudget, ratio: number): number {
  return (reference.cores * 1e6) / (ratio * reference.rps);
}

/** The section's text: a table of the budgets and what they say about the target. */
export function cpuBudgetMarkdown(budgets: ReadonlyArray<{ label: string; budget: CpuBudget }>, reference: CpuBudget, ratio: number): string {
  const rows = budgets.map(
    ({ label, budget: b }) =>
      `| ${label} | ${formatNumber(b.rps)} | ${formatNumber(b.routerUs)} | ${formatNumber(b.worldUs)} | ${formatNumber(b.restUs)} | ${formatNumber(b.busyUs)} | ${percentOf(b.idleShare)} |`,
  );
  const kv = budgets.filter(({ budget }) => budget !== reference);
  const bound = routerPlusWorldBound(reference, ratio);
  // What a router + world budget leaves each kvroute router, with the world's CPU of its own rounds.
  const routerLeft = (limit: number) =>
    kv.map(({ label, budget: b }) => `${formatNumber(Math.max(0, limit - b.worldUs))} us (${label}, against ${formatNumber(b.routerUs)})`).join(', ');
  const verdict =
    reference.idleShare < SATURATED_IDLE_SHARE
      ? `SMG's rounds left ${percentOf(reference.idleShare)} of the ${reference.cores} cores idle: the machine was saturated, so ${ratio}x SMG's req/s ` +
        `needs kvroute's router + world CPU per request at most (${formatNumber(reference.routerUs)} + ${formatNumber(reference.worldUs)}) / ${ratio} = **${formatNumber(bound)} us** ` +
        `(the rest of the machine held as it was); kvroute's: ${kv.map(({ label, budget: b }) => `${formatNumber(b.routerUs + b.worldUs)} us (${label})`).join(', ')}. ` +
        `With the world's own CPU per request in kvroute's rounds, that leaves its router at most ${routerLeft(bound)}.`
      : `SMG's rounds left ${percentOf(reference.idleShare)} of the ${reference.cores} cores idle: the machine's CPU did not bound them.`;
  const capacity = capacityBound(reference, ratio);
  const ceiling =
    `Whatever bounds the rounds, ${ratio}x SMG's req/s (${formatNumber(ratio * reference.rps)}) leaves at most ${reference.cores} cores / that rate = **${formatNumber(capacity)} us** ` +
    `of CPU per request for the router and the world together on this machine: with the world's own CPU per request, kvroute's router at most ` +
    `${routerLeft(capacity)}.`;
  return [
    `**Where the CPU went in the closed loop** (medians of rounds, per request: the router's process, the world's process with the engines and the load generator, the rest of the machine's busy time):`,
    '',
    '| router | req/s | router (us) | world (us) | rest of the machine (us) | machine busy (us) | machine idle |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    ...threadsMarkdown(budgets),
    '',
    verdict,
    '',
    ceiling,
    ...mainThreadBound(kv, reference, ratio),
  ].join('\n');
}

/** For a router its main thread bounds: the CPU per request on that thread, against what one core gives `ratio` times the reference's req/s. */
function mainThreadBound(kv: ReadonlyArray<{ label: string; budget: CpuBudget }>, reference: CpuBudget, ratio: number): string[] {
  const bound = kv.filter(({ budget }) => {
    const r = roundsBound(budget);
    return r?.kind === 'thread' && r.thread === "the router's main thread";
  });
  if (bound.length === 0) return [];
  const perRequest = (b: CpuBudget) => (b.threads!.routerMain.share * 1e6) / b.rps;
  return [
    '',
    `Where the router's main thread bounds the rounds, ${ratio}x SMG's req/s needs at most one core / that rate = **${formatNumber(1e6 / (ratio * reference.rps))} us** per request on that thread ` +
      `(and a core of its own all the time); it took ${bound.map(({ label, budget: b }) => `${formatNumber(perRequest(b))} us (${label})`).join(', ')}.`,
  ];
}

/** The thread table and what bounded each router's rounds; nothing when the rounds have no thread figures. */
function threadsMarkdown(budgets: ReadonlyArray<{ label: string; budget: CpuBudget }>): string[] {
  if (!budgets.every(({ budget }) => budget.threads)) return [];
  const busiest = (r: RoleShare) => (r.threads > 1 ? ` (busiest ${percentOf(r.busiest)})` : '');
  const rows = budgets.map(({ label, budget: b }) => {
    const t = b.threads!;
    return `| ${label} | ${shareText(t.worldEngines)}${busiest(t.worldEngines)} | ${shareText(t.worldLoad)} | ${shareText(t.worldOther)} | ${shareText(t.routerMain)} | ${shareText(t.routerOther)}${busiest(t.routerOther)} | ${boundText(b)} |`;
  });
  return [
    '',
    `**Thread by thread** (medians of rounds, shares of one core over the round: on a core, + waiting for one, from /proc/<pid>/task/*/schedstat; the world's two engines share its main thread or have threads of their own, its closed-loop load generator has a thread of its own; a thread with work ${percentOf(SATURATED_THREAD)} of the round or more bounds it; on a saturated machine, where every thread waits, one on a core that long):`,
    '',
    '| router | world engines | world load generator | world other threads | router main thread | router other threads | what bounded the rounds |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ];
}
