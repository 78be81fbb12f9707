// The whole machine's CPU time (Linux: /proc/stat), busy and idle, summed over its cores: whether a
// round of the peers suite saturated the machine (then req/s is bounded by the CPU every process
// spends per request, the router's, the world's and the rest) or left cores idle (then a router
// on one thread is bounded by that thread).
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ

export interface MachineCpu {
  /** user + nice + system + irq + softirq + steal, all cores, in microseconds. */
  busyUs: number;
  /** idle + iowait, all cores, in microseconds. */
  idleUs: number;
  cores: number;
}

/** The machine's CPU time from /proc/stat's text, or undefined when it has no aggregate `cpu` line. */
export function machineCpuFromStat(procStat: string): MachineCpu | undefined {
  const lines = procStat.split('\n');
  const total = lines.find((l) => l.startsWith('cpu '));
  if (total === undefined) return undefined;
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  const f = total.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 5 || f.some((x) => !Number.isFinite(x))) return undefined;
  const [user, nice, system, idle, iowait, irq = 0, softirq = 0, steal = 0] = f;
  const us = (ticks: number) => (ticks * 1e6) / TICKS_PER_SECOND;
  return { busyUs: us(user + nice + system + irq + softirq + steal), idleUs: us(idle + iowait), cores: lines.filter((l) => /^cpu\d+\s/.test(l)).length };
}

/** This machine's CPU time now, or undefined where /proc/stat is absent. */
export function machineCpuMicros(): MachineCpu | undefined {
  try {
    return machineCpuFromStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}
