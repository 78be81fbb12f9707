import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { shareText, snapshotThreads, threadShares, type ThreadsSnapshot } from '../../../bench/frontend/thread-shares.js';

const snap = (atMs: number, processUs: number, threads: Record<number, [number, number?]>): ThreadsSnapshot => ({
  atMs,
  processUs,
  threads: new Map(Object.entries(threads).map(([tid, [cpuUs, waitUs]]) => [Number(tid), { cpuUs, waitUs }])),
});

describe('threadShares', () => {
  it("gives each role's share of a core, its wait and its busiest thread, and the rest of the process as other", () => {
    // 1 s apart: thread 1 (main) 0.8 s on a core and 0.1 s waiting; engines 2 and 3 0.3 and 0.1 s; 4 is a helper.
    const a = snap(0, 1_000_000, { 1: [500_000, 0], 2: [100_000, 0], 3: [100_000, 50_000], 4: [10_000, 0] });
    const b = snap(1000, 2_400_000, { 1: [1_300_000, 100_000], 2: [400_000, 200_000], 3: [200_000, 60_000], 4: [20_000, 5_000], 5: [30_000, 1_000] });
    const s = threadShares(a, b, { main: [1], engine: [2, 3, 3] })!;
    expect(s.main).toEqual({ share: 0.8, waiting: 0.1, busiest: 0.8, busiestWaiting: 0.1, threads: 1 });
    expect(s.engine.share).toBeCloseTo(0.4);
    expect(s.engine.waiting).toBeCloseTo(0.21);
    expect(s.engine).toMatchObject({ busiest: 0.3, busiestWaiting: 0.2, threads: 2 }); // thread 3 named twice counts once
    // The process grew by 1.4 s; the roles used 1.2 s: 0.2 s is the rest's (threads 4 and 5, which started meanwhile, and any that ended).
    expect(s.other.share).toBeCloseTo(0.2);
    expect(s.other).toMatchObject({ busiest: 0.03, busiestWaiting: 0.001, threads: 2 });
    expect(s.other.waiting).toBeCloseTo(0.006);
  });

  it("leaves the wait out where the kernel keeps none, and takes the live threads' time when the process's ticks lag", () => {
    const a = snap(0, 0, { 1: [0], 2: [0] });
    const b = snap(500, 0, { 1: [250_000], 2: [100_000] });
    const s = threadShares(a, b, { main: [1], gone: [9] })!;
    expect(s.main).toEqual({ share: 0.5, busiest: 0.5, threads: 1 });
    expect(s.gone).toEqual({ share: 0, waiting: 0, busiest: 0, threads: 0 });
    expect(s.other.share).toBeCloseTo(0.2);
  });

  it('refuses a role named other or a thread in two roles, and an empty interval', () => {
    const a = snap(0, 0, { 1: [0] });
    expect(() => threadShares(a, snap(1, 0, { 1: [0] }), { other: [1] })).toThrow(RangeError);
    expect(() => threadShares(a, snap(1, 0, { 1: [0] }), { x: [1], y: [1] })).toThrow(RangeError);
    expect(threadShares(a, a, { x: [1] })).toBeUndefined();
  });

  it('reads as a share of a core with its wait', () => {
    expect(shareText({ share: 0.834, waiting: 0.091, busiest: 0.834, threads: 1 })).toBe('83% +9% waiting');
    expect(shareText({ share: 0.5, busiest: 0.5, threads: 1 })).toBe('50%');
  });
});

describe('snapshotThreads', () => {
  it.runIf(existsSync('/proc/self/task'))('shows a busy worker thread as its own role, apart from the rest of the process', async () => {
    // The worker spins until told to stop and reports its thread id first.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const tid = Number(require('node:fs').readFileSync('/proc/thread-self/stat', 'utf8').split(' ')[0]);
       const stop = new Int32Array(new SharedArrayBuffer(4));
       parentPort.postMessage({ tid, stop: stop.buffer });
       parentPort.once('message', () => {});
       let x = 0; const t0 = Date.now();
       while (Atomics.load(stop, 0) === 0 && Date.now() - t0 < 20000) x += Math.sqrt(x + 1);`,
      { eval: true },
    );
    const { tid, stop } = await new Promise<{ tid: number; stop: SharedArrayBuffer }>((resolve) => worker.once('message', resolve));
    const a = snapshotThreads(process.pid)!;
    // Until the worker's counter has grown by 30 ms of CPU (wall time varies on a loaded machine).
    const deadline = Date.now() + 15_000;
    let b = snapshotThreads(process.pid)!;
    while ((b.threads.get(tid)?.cpuUs ?? 0) - a.threads.get(tid)!.cpuUs < 30_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      b = snapshotThreads(process.pid)!;
    }
    Atomics.store(new Int32Array(stop), 0, 1);
    await worker.terminate();
    const s = threadShares(a, b, { spinner: [tid], main: [process.pid] })!;
    expect(s.spinner.threads).toBe(1);
    expect(s.spinner.share * (b.atMs - a.atMs) * 1000).toBeGreaterThanOrEqual(30_000);
    expect(s.spinner.share).toBeGreaterThan(s.main.share); // the main thread mostly slept
    expect(snapshotThreads(2 ** 22 + 12345)).toBeUndefined();
  });
});
