// Behaviour of the settled GC: when it stops waiting, never how long a real GC takes.
import { describe, expect, it } from 'vitest';
import { gcAndSettle, helperThreadsCpuNs } from '../../../bench/lib/gc-settle.js';

/** A helper CPU reading that advances by the given nanoseconds at each read after the first. */
function readings(steps: number[], then: number): () => number {
  let ns = 0;
  let i = -1;
  return () => {
    if (i >= 0) ns += i < steps.length ? steps[i] : then;
    i++;
    return ns;
  };
}

describe('gcAndSettle', () => {
  it('waits while the helper threads work and stops at the first quiet poll', async () => {
    const read = readings([5e6, 3e6, 0.2e6], 9e6);
    const r = await gcAndSettle({ helperCpuNs: read, pollMs: 1, quietNs: 1e6 });
    expect(r.quiet).toBe(true);
    // Two busy polls, then the quiet one: four readings in all.
    expect(read()).toBe(5e6 + 3e6 + 0.2e6 + 9e6);
  });

  it('gives up at maxMs when the helpers never go quiet', async () => {
    const r = await gcAndSettle({ helperCpuNs: readings([], 5e6), pollMs: 2, maxMs: 30 });
    expect(r.quiet).toBe(false);
    expect(r.waitedMs).toBeGreaterThanOrEqual(30);
  });

  it('waits a fixed time when the helpers cannot be read', async () => {
    const r = await gcAndSettle({ helperCpuNs: () => undefined, fallbackMs: 15 });
    expect(r.quiet).toBe(false);
    expect(r.waitedMs).toBeGreaterThanOrEqual(14);
  });

  it.runIf(process.platform === 'linux')("reads this process's other threads on Linux", async () => {
    const a = helperThreadsCpuNs();
    expect(a).toBeGreaterThanOrEqual(0);
    expect(helperThreadsCpuNs()!).toBeGreaterThanOrEqual(a!);
    expect((await gcAndSettle({ maxMs: 500 })).waitedMs).toBeLessThan(2_000);
  });
});
