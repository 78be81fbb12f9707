// What the long-context suite reads around one load on a router in this process: the process's
// CPU (every thread: the event loop, libuv's pool where long prompts are tokenized, GC helpers)
// and the event loop thread's own, and how late a 1 ms timer fired on the event loop meanwhile.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { threadCpuMicros } from '../frontend/thread-cpu.js';

export interface Around<T> {
  result: T;
  /** CPU of the whole process and of its event loop thread over the load, microseconds. */
  processCpuUs: number;
  mainCpuUs: number;
  /** How late the event loop's 1 ms timer fired: p99 and the worst, milliseconds. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

const RESOLUTION_MS = 1;

export async function around<T>(load: () => Promise<T>): Promise<Around<T>> {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const cpu0 = process.cpuUsage();
  const main0 = threadCpuMicros() ?? Number.NaN;
  delay.enable();
  const result = await load();
  delay.disable();
  const cpu = process.cpuUsage(cpu0);
  // The histogram holds the time between timer runs (at least the resolution): the lateness is what exceeds it.
  const late = (ns: number) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
  return {
    result,
    processCpuUs: cpu.user + cpu.system,
    mainCpuUs: (threadCpuMicros() ?? Number.NaN) - main0,
    loopDelayP99Ms: late(delay.percentile(99)),
    loopDelayMaxMs: late(delay.max),
  };
}
