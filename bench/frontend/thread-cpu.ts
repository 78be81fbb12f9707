// CPU time of the calling thread alone (Linux: /proc/thread-self/stat). process.cpuUsage() counts
// every thread of the process (GC helpers, libuv's pool): the router thread's own CPU per request
// is the frontend bench's stable figure (requests per second also depend on what the machine's
// other work, the engine and the load generator included, leaves to the router).
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node supports

/** This thread's user + system CPU time in microseconds, or undefined where /proc is absent. */
export function threadCpuMicros(): number | undefined {
  let stat: string;
  try {
    stat = readFileSync('/proc/thread-self/stat', 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces, so split after its closing paren).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) * 1e6) / TICKS_PER_SECOND;
}
