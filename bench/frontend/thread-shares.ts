// Where a process's CPU went over an interval, thread by thread: the share of one core each role's
// threads used (the world's engine threads and load-generator threads, a router's main thread) and
// the rest of the process. A thread at ~100% of a core is saturated: whatever it serves waits for
// it, however many cores the machine leaves idle. Read from /proc (thread-cpu.ts).
import { processCpuMicros, processThreadsCpu } from './thread-cpu.js';

export interface ThreadsSnapshot {
  atMs: number;
  /** The whole process (every thread, the ended ones included). */
  processUs: number;
  /** CPU time and run-queue wait per live thread id. */
  threads: Map<number, { cpuUs: number; waitUs?: number }>;
}

/** A role's threads over an interval, in shares of one core (1 = a core busy all the time). */
export interface RoleShare {
  /** All the role's threads together, on a CPU. */
  share: number;
  /**
   * All the role's threads together, ready to run but waiting for a CPU (undefined where the
   * kernel has no schedstat). A thread's share + waiting near 1 had work all the time: it is
   * saturated, and what it got of a core was what the machine's other threads left it.
   */
  waiting?: number;
  /** Its busiest thread alone (the most time on a CPU), and that thread's wait for one. */
  busiest: number;
  busiestWaiting?: number;
  /** How many of its threads were seen. */
  threads: number;
}

/** Every role asked for, and `other`: the rest of the process (its busiest thread among the live ones). */
export type ThreadShares = Record<string, RoleShare>;

export const OTHER = 'other';

/** A process's threads now, or undefined where /proc is absent or the process is gone. */
export function snapshotThreads(pid: number): ThreadsSnapshot | undefined {
  const threads = processThreadsCpu(pid);
  const processUs = processCpuMicros(pid);
  if (!threads || processUs === undefined) return undefined;
  return { atMs: performance.now(), processUs, threads: new Map(threads.map((t) => [t.tid, { cpuUs: t.cpuUs, waitUs: t.waitUs }])) };
}

/**
 * Each role's share of a core between two snapshots of one process. `roles` names thread ids; a
 * thread seen only in `b` started meanwhile and counts from zero. `other` is the process's time
 * less the roles' (so threads that ended meanwhile count there, as far as the kernel kept them).
 */
export function threadShares(a: ThreadsSnapshot, b: ThreadsSnapshot, roles: Readonly<Record<string, readonly number[]>>): ThreadShares | undefined {
  const wallUs = (b.atMs - a.atMs) * 1000;
  if (!(wallUs > 0)) return undefined;
  const used = (tid: number) => {
    const end = b.threads.get(tid);
    return end === undefined ? undefined : Math.max(0, end.cpuUs - (a.threads.get(tid)?.cpuUs ?? 0));
  };
  // undefined when the kernel keeps no run-queue wait (for this thread at either end)
  const waited = (tid: number) => {
    const end = b.threads.get(tid)?.waitUs;
    const start = a.threads.has(tid) ? a.threads.get(tid)!.waitUs : 0;
    return end === undefined || start === undefined ? undefined : Math.max(0, end - start);
  };
  const share = (t: Tally, us = t.us): RoleShare => ({
    share: us / wallUs,
    ...(t.waitUs === undefined ? {} : { waiting: t.waitUs / wallUs }),
    busiest: t.busiestUs / wallUs,
    ...(t.busiestWaitUs === undefined ? {} : { busiestWaiting: t.busiestWaitUs / wallUs }),
    threads: t.seen,
  });
  const out: ThreadShares = {};
  const named = new Set<number>();
  let namedUs = 0;
  for (const [role, tids] of Object.entries(roles)) {
    if (role === OTHER) throw new RangeError(`"${OTHER}" is the rest of the process, not a role to name`);
    const own = new Set(tids);
    for (const tid of own) {
      if (named.has(tid)) throw new RangeError(`thread ${tid} is named by two roles`);
      named.add(tid);
    }
    const t = tally(own, used, waited);
    namedUs += t.us;
    out[role] = share(t);
  }
  const rest = tally(
    [...b.threads.keys()].filter((tid) => !named.has(tid)),
    used,
    waited,
  );
  // The process's time comes in 10 ms ticks: the rest is at least what its live threads show.
  out[OTHER] = share(rest, Math.max(b.processUs - a.processUs - namedUs, rest.us));
  return out;
}

/** Threads' CPU time summed, their wait (undefined when any thread's is unknown) and the busiest of them. */
interface Tally {
  us: number;
  waitUs: number | undefined;
  busiestUs: number;
  busiestWaitUs: number | undefined;
  /** Threads with a CPU time at the interval's end. */
  seen: number;
}

function tally(tids: Iterable<number>, used: (tid: number) => number | undefined, waited: (tid: number) => number | undefined): Tally {
  const t: Tally = { us: 0, waitUs: 0, busiestUs: 0, busiestWaitUs: undefined, seen: 0 };
  for (const tid of tids) {
    const us = used(tid);
    if (us === undefined) continue;
    const w = waited(tid);
    t.seen++;
    t.us += us;
    t.waitUs = t.waitUs === undefined || w === undefined ? undefined : t.waitUs + w;
    if (t.seen === 1 || us > t.busiestUs) [t.busiestUs, t.busiestWaitUs] = [us, w];
  }
  return t;
}

/** A share of a core as a whole percentage: "83%". */
export function percentOf(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** A role's share of a core, with its wait for one where known: "83% +9% waiting". */
export function shareText(r: RoleShare): string {
  return `${percentOf(r.share)}${r.waiting === undefined ? '' : ` +${percentOf(r.waiting)} waiting`}`;
}
