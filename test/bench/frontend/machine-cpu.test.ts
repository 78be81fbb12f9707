import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { machineCpuFromStat, machineCpuMicros } from '../../../bench/frontend/machine-cpu.js';

const STAT = [
  'cpu  1000 20 300 5000 80 5 15 10 7 0',
  'cpu0 500 10 150 2500 40 3 7 5 7 0',
  'cpu1 500 10 150 2500 40 2 8 5 0 0',
  'intr 12345 0 0',
  'ctxt 999',
].join('\n');

describe('machineCpuFromStat', () => {
  it('sums busy (user, nice, system, irq, softirq, steal) and idle (idle, iowait) ticks of every core, guest time counted once', () => {
    expect(machineCpuFromStat(STAT)).toEqual({ busyUs: (1000 + 20 + 300 + 5 + 15 + 10) * 10_000, idleUs: (5000 + 80) * 10_000, cores: 2 });
  });

  it('reads old kernels without irq/softirq/steal columns, and refuses text without the cpu line', () => {
    expect(machineCpuFromStat('cpu  10 0 5 100 1\ncpu0 10 0 5 100 1')).toEqual({ busyUs: 150_000, idleUs: 1_010_000, cores: 1 });
    expect(machineCpuFromStat('intr 1 2 3')).toBeUndefined();
    expect(machineCpuFromStat('cpu  a b c d e')).toBeUndefined();
    expect(machineCpuFromStat('')).toBeUndefined();
  });

  it.runIf(existsSync('/proc/stat'))("reads this machine's counters, which only grow", () => {
    const a = machineCpuMicros()!;
    let x = 0;
    for (let i = 0; i < 2_000_000; i++) x += Math.sqrt(i);
    const b = machineCpuMicros()!;
    expect(x).toBeGreaterThan(0);
    expect(a.cores).toBeGreaterThanOrEqual(1);
    expect(b.busyUs).toBeGreaterThanOrEqual(a.busyUs);
    expect(b.idleUs).toBeGreaterThanOrEqual(a.idleUs);
  });
});
