// CPU time of the calling thread alone (Linux: /proc/thread-self/stat). process.cpuUsage() counts
// every thread of the process (GC helpers, libuv's pool): the router thread's own CPU per request
// is the frontend bench's stable figure (requests per second also depend on what the machine's
// other work, the engine and the load generator included, leaves to the router).
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node supports

/** This thread's user + system CPU time in microseconds, or undefined where /proc is absent. */
export function threadCpuMicros(): number | undefined {
  return cpuMicrosOf('/proc/thread-self/stat');
}

/**
 * A whole process's user + system CPU time in microseconds (all its threads), or undefined where
 * /proc is absent or the process is gone: the peers suite's router CPU per request.
 */
export function processCpuMicros(pid: number): number | undefined {
  return cpuMicrosOf(`/proc/${pid}/stat`);
}

/** The CPU time of a process's main thread alone (its thread id is the process id), or undefined. */
export function mainThreadCpuMicros(pid: number): number | undefined {
  return cpuMicrosOf(`/proc/${pid}/task/${pid}/stat`);
}

/** One thread of a process: its id, its name (Linux's comm, 15 characters at most) and its CPU time. */
export interface ThreadCpu {
  tid: number;
  name: string;
  /** Time on a CPU, user and system: from schedstat (nanosecond-precise) where the kernel has it, else stat's 10 ms ticks. */
  cpuUs: number;
  /** Time it was ready to run but waited for a CPU (schedstat's run-queue wait), where the kernel has it. */
  waitUs?: number;
}

/**
 * Every thread of a process now (/proc/<pid>/task), or undefined where /proc is absent or the
 * process is gone. A thread that ends between the listing and its read is left out.
 */
export function processThreadsCpu(pid: number): ThreadCpu[] | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const out: ThreadCpu[] = [];
  for (const tid of tids) {
    let t: ThreadCpu | undefined;
    try {
      t = threadCpuFromStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
    } catch {
      continue; // the thread ended meanwhile
    }
    if (!t) continue;
    try {
      const sched = schedstatFrom(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'));
      if (sched) Object.assign(t, sched);
    } catch {
      // a kernel without schedstat, or the thread ended: stat's ticks stand
    }
    out.push(t);
  }
  return out;
}

/** A schedstat line ("<ns on a CPU> <ns waiting for one> <timeslices>") in microseconds. */
export function schedstatFrom(text: string): { cpuUs: number; waitUs: number } | undefined {
  const [run, wait] = text.trim().split(/\s+/).map(Number);
  if (!Number.isFinite(run) || !Number.isFinite(wait)) return undefined;
  return { cpuUs: run / 1000, waitUs: wait / 1000 };
}

/** The calling thread's id as the kernel knows it (/proc/thread-self), or undefined where /proc is absent. */
export function currentThreadId(): number | undefined {
  try {
    return threadCpuFromStat(readFileSync('/proc/thread-self/stat', 'utf8'))?.tid;
  } catch {
    return undefined;
  }
}

/** The thread id, name and CPU time of a /proc/<pid>/task/<tid>/stat line. */
export function threadCpuFromStat(stat: string): ThreadCpu | undefined {
  const open = stat.indexOf(' (');
  const close = stat.lastIndexOf(')');
  const tid = Number(stat.slice(0, open));
  const cpuUs = cpuMicrosFromStat(stat);
  if (open < 1 || close < open || !Number.isInteger(tid) || cpuUs === undefined) return undefined;
  return { tid, name: stat.slice(open + 2, close), cpuUs };
}

function cpuMicrosOf(statFile: string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(statFile, 'utf8');
  } catch {
    return undefined;
  }
  return cpuMicrosFromStat(stat);
}

/** utime + stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line, in microseconds. */
export function cpuMicrosFromStat(stat: string): number | undefined {
  // Fields after the command name (which may hold spaces, so split after its closing paren).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) * 1e6) / TICKS_PER_SECOND;
}
