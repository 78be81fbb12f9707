import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { threadCpuMicros } from '../../../bench/frontend/thread-cpu.js';

describe('threadCpuMicros', () => {
  it.runIf(existsSync('/proc/thread-self/stat'))("counts this thread's CPU time, which grows with work done here", () => {
    const before = threadCpuMicros()!;
    expect(before).toBeGreaterThanOrEqual(0);
    const until = Date.now() + 60;
    let x = 0;
    while (Date.now() < until) x += Math.sqrt(x + 1);
    const after = threadCpuMicros()!;
    expect(x).toBeGreaterThan(0);
    // 60 ms of busy work: at least a few of the 10 ms ticks (the machine may deschedule us briefly).
    expect(after - before).toBeGreaterThanOrEqual(20_000);
  });
});
