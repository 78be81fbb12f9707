import { existsSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import {
  cpuMicrosFromStat,
  currentThreadId,
  mainThreadCpuMicros,
  processCpuMicros,
  processThreadsCpu,
  schedstatFrom,
  threadCpuFromStat,
  threadCpuMicros,
} from '../../../bench/frontend/thread-cpu.js';

describe('threadCpuMicros', () => {
  it.runIf(existsSync('/proc/thread-self/stat'))("counts this thread's CPU time, which grows with work done here", () => {
    const before = threadCpuMicros()!;
    expect(before).toBeGreaterThanOrEqual(0);
    // Busy work until the counter has grown by two of its 10 ms ticks: on a loaded machine the
    // wall time this takes varies, the CPU time it shows does not. A counter that does not grow
    // runs into the deadline.
    const deadline = Date.now() + 10_000;
    let x = 0;
    let after = before;
    while (after - before < 20_000 && Date.now() < deadline) {
      for (let i = 0; i < 100_000; i++) x += Math.sqrt(x + 1);
      after = threadCpuMicros()!;
    }
    expect(x).toBeGreaterThan(0);
    expect(after - before).toBeGreaterThanOrEqual(20_000);
  });
});

describe('processCpuMicros', () => {
  it('reads utime + stime after a command name holding spaces and parentheses', () => {
    const stat = '4242 (smg::router (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 13 0 1000 0 0';
    expect(cpuMicrosFromStat(stat)).toBe(3_000_000); // (250 + 50) ticks of 10 ms
    expect(cpuMicrosFromStat('garbage')).toBeUndefined();
  });

  it.runIf(existsSync('/proc/self/stat'))('counts every thread of a process, and nothing for a process that is gone', () => {
    const thread = threadCpuMicros()!; // read first: the process's total can only have grown since
    expect(processCpuMicros(process.pid)).toBeGreaterThanOrEqual(thread);
    expect(processCpuMicros(2 ** 22 + 12345)).toBeUndefined();
  });

  it.runIf(existsSync('/proc/self/task') && isMainThread)("reads a process's main thread alone: at most the whole process, at least this (main) thread", () => {
    const thread = threadCpuMicros()!;
    const main = mainThreadCpuMicros(process.pid)!;
    expect(main).toBeGreaterThanOrEqual(thread);
    expect(processCpuMicros(process.pid)).toBeGreaterThanOrEqual(main);
    expect(mainThreadCpuMicros(2 ** 22 + 12345)).toBeUndefined();
  });
});

describe('processThreadsCpu', () => {
  it("reads a thread's id, name and CPU time, and a schedstat line", () => {
    expect(threadCpuFromStat('4243 (tokio-rt (w) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 13 0 1000 0 0')).toEqual({
      tid: 4243,
      name: 'tokio-rt (w) 1',
      cpuUs: 3_000_000,
    });
    expect(threadCpuFromStat('(no id) S 1')).toBeUndefined();
    expect(threadCpuFromStat('garbage')).toBeUndefined();
    expect(schedstatFrom('249324059 32337770 1516\n')).toEqual({ cpuUs: 249_324.059, waitUs: 32_337.77 });
    expect(schedstatFrom('')).toBeUndefined();
  });

  it.runIf(existsSync('/proc/self/task') && isMainThread)(
    'lists every thread of this process, this one included, and nothing for a process that is gone',
    () => {
      const me = currentThreadId()!;
      expect(me).toBe(process.pid); // the main thread's id is the process id
      const threads = processThreadsCpu(process.pid)!;
      expect(threads.length).toBeGreaterThan(1); // V8's and libuv's helpers beside the main thread
      const main = threads.find((t) => t.tid === me)!;
      expect(main.cpuUs).toBeGreaterThan(0);
      if (existsSync('/proc/self/schedstat')) expect(main.waitUs).toBeGreaterThanOrEqual(0);
      expect(processThreadsCpu(2 ** 22 + 12345)).toBeUndefined();
    },
  );
});
