// Where the machine's CPU went in the closed-loop rounds, and what that makes of the 1.5x req/s
// target: on a machine SMG's rounds keep busy, requests per second are the cores' time over the CPU
// every process spends per request, so 1.5x SMG's needs kvroute's router + world CPU per request
// at most (SMG's router + world) / 1.5; with cores left idle, a router thread is the bound instead.
import { formatNumber } from '../../lib/format.js';
import { median } from '../../lib/stats.js';
import type { ThroughputRound } from './compare.js';

/** Medians over a contender's rounds, per request unless said. */
export interface CpuBudget {
  rps: number;
  routerUs: number;
  worldUs: number;
  /** The machine's busy time that was neither the router's nor the world's (the bench driver, other work). */
  restUs: number;
  busyUs: number;
  idleShare: number;
  routerMainThreadShare: number;
  cores: number;
}

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
    routerMainThreadShare: med((r) => r.machine!.routerMainThreadShare),
    cores: measured[0].machine!.cores,
  };
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

const pct = (share: number) => `${Math.round(share * 100)}%`;

/** The section's text: a table of the budgets and what they say about the target. */
export function cpuBudgetMarkdown(budgets: ReadonlyArray<{ label: string; budget: CpuBudget }>, reference: CpuBudget, ratio: number): string {
  // The reference (SMG) works on threads of its own pool, not its main thread: no main-thread share.
  const rows = budgets.map(({ label, budget: b }) =>
    `| ${label} | ${formatNumber(b.rps)} | ${formatNumber(b.routerUs)} | ${formatNumber(b.worldUs)} | ${formatNumber(b.restUs)} | ${formatNumber(b.busyUs)} | ${pct(b.idleShare)} | ${b === reference ? '-' : pct(b.routerMainThreadShare)} |`,
  );
  const kv = budgets.filter(({ budget }) => budget !== reference);
  const bound = routerPlusWorldBound(reference, ratio);
  // What a router + world budget leaves each kvroute router, with the world's CPU of its own rounds.
  const routerLeft = (limit: number) =>
    kv.map(({ label, budget: b }) => `${formatNumber(Math.max(0, limit - b.worldUs))} us (${label}, against ${formatNumber(b.routerUs)})`).join(', ');
  const verdict =
    reference.idleShare < SATURATED_IDLE_SHARE
      ? `SMG's rounds left ${pct(reference.idleShare)} of the ${reference.cores} cores idle: the machine was saturated, so ${ratio}x SMG's req/s ` +
        `needs kvroute's router + world CPU per request at most (${formatNumber(reference.routerUs)} + ${formatNumber(reference.worldUs)}) / ${ratio} = **${formatNumber(bound)} us** ` +
        `(the rest of the machine held as it was); kvroute's: ${kv.map(({ label, budget: b }) => `${formatNumber(b.routerUs + b.worldUs)} us (${label})`).join(', ')}. ` +
        `With the world's own CPU per request in kvroute's rounds, that leaves its router at most ${routerLeft(bound)}.`
      : `SMG's rounds left ${pct(reference.idleShare)} of the ${reference.cores} cores idle: the machine's CPU did not bound them.`;
  const capacity = capacityBound(reference, ratio);
  const ceiling =
    `Whatever bounds the rounds, ${ratio}x SMG's req/s (${formatNumber(ratio * reference.rps)}) leaves at most ${reference.cores} cores / that rate = **${formatNumber(capacity)} us** ` +
    `of CPU per request for the router and the world together on this machine: with the world's own CPU per request, kvroute's router at most ` +
    `${routerLeft(capacity)}.`;
  const threadBound = kv.filter(({ budget: b }) => b.idleShare >= SATURATED_IDLE_SHARE && b.routerMainThreadShare >= 0.9);
  return [
    `**Where the CPU went in the closed loop** (medians of rounds, per request: the router's process, the world's process with the engines and the load generator, the rest of the machine's busy time, and the share of one core kvroute's main thread used, its one JavaScript thread):`,
    '',
    '| router | req/s | router (us) | world (us) | rest of the machine (us) | machine busy (us) | machine idle | router main thread |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    verdict,
    '',
    ceiling,
    ...(threadBound.length ? ['', `With cores left idle, ${threadBound.map(({ label }) => label).join(' and ')} kept the router's main thread busy (90% of a core or more): one thread bounds its req/s.`] : []),
  ].join('\n');
}
