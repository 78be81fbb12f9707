// Behaviour of the sampling helpers (never their speed: timings are benchmark figures).
import { describe, expect, it } from 'vitest';
import { clockOverhead, interleavedRates, sampleAsync, sampleCalls } from '../../../bench/lib/timer.js';

describe('timer', () => {
  it('measures the clock read once and never negative', () => {
    const a = clockOverhead();
    expect(a).toBeGreaterThanOrEqual(0);
    expect(clockOverhead()).toBe(a);
  });

  it('samples every call index once, in order, after the warm-up', () => {
    const seen: number[] = [];
    const r = sampleCalls((i) => seen.push(i), { samples: 50, warmup: 5, warmupMs: 0, batch: 3 });
    expect(r.batch).toBe(3);
    expect(r.perCallNs).toHaveLength(50);
    // The 5 warm-up calls, one batch that sizes the chunks, then the 50 batches timed.
    expect(seen).toEqual(Array.from({ length: 5 + 3 + 150 }, (_, i) => i));
    for (const ns of r.perCallNs) expect(ns).toBeGreaterThanOrEqual(0);
  });

  it('warms up through the timed loop for warmupMs before the first sample', () => {
    const at: number[] = [];
    const r = sampleCalls(() => at.push(performance.now()), { samples: 10, warmup: 2, warmupMs: 30, batch: 1 });
    expect(r.perCallNs).toHaveLength(10);
    // The samples are the last 10 calls; the warm-up's calls went on for 30 ms before them.
    const firstSampled = at[at.length - 10];
    expect(firstSampled - at[0]).toBeGreaterThanOrEqual(30);
    expect(at.length).toBeGreaterThan(2 + 10);
  });

  it('batches tiny calls automatically and stops at maxMs', () => {
    const r = sampleCalls(() => 1, { samples: 100, warmup: 0 });
    expect(r.batch).toBeGreaterThan(1);
    const slow = sampleCalls(
      () => {
        const t = performance.now();
        while (performance.now() - t < 1);
      },
      { samples: 100_000, warmup: 0, batch: 1, maxMs: 150 },
    );
    expect(slow.perCallNs.length).toBeLessThan(100_000);
    expect(slow.perCallNs.length).toBeGreaterThan(0);
  });

  it('samples async calls one at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const r = await sampleAsync(
      async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
      },
      { samples: 20, warmup: 2 },
    );
    expect(r.perCallNs).toHaveLength(20);
    expect(most).toBe(1);
  });

  it('gives every candidate one rate per round, in alternation', async () => {
    const order: string[] = [];
    const rates = await interleavedRates(
      {
        a: () => (order.push('a'), 10),
        b: () => (order.push('b'), 20),
      },
      { rounds: 3, minMsPerRound: 2, warmup: 0 },
    );
    expect(rates.a).toHaveLength(3);
    expect(rates.b).toHaveLength(3);
    for (const x of [...rates.a, ...rates.b]) expect(x).toBeGreaterThan(0);
    // a's calls of a round all come before b's of the same round.
    const firstB = order.indexOf('b');
    expect(order.slice(0, firstB).every((x) => x === 'a')).toBe(true);
  });
});
