// CPU time of the calling thread alone (Linux: /proc/thread-self/stat). process.cpuUsage() counts
// every thread of the process (GC helpers, libuv's pool): the router thread's own CPU per request
// is the frontend bench's stable figure (requests per second also depend on what the machine's
// other work, the engine and the load generator included, leaves to the router).
import { readFileSync } from 'node:fs';

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
