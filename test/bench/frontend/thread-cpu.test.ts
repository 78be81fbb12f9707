import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { threadCpuMicros } from '../../../bench/frontend/thread-cpu.js';

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
