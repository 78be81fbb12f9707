import { describe, expect, it } from 'vitest';
import { pace } from '../../../bench/frontend/pacer.js';

describe('pace', () => {
  it('calls back once per send time, in order, then resolves', async () => {
    const ticks: number[] = [];
    const offsets = Float64Array.from({ length: 30 }, (_, i) => i * 0.5);
    const p = pace(offsets, (i) => ticks.push(i));
    await p.done;
    await p.stop();
    expect(ticks).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('stops calling back once stopped', async () => {
    const ticks: number[] = [];
    const p = pace(
      Float64Array.from({ length: 1000 }, (_, i) => i * 5),
      (i) => ticks.push(i),
    );
    while (ticks.length < 2) await new Promise((r) => setTimeout(r, 5));
    await p.stop();
    await p.done;
    const seen = ticks.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(ticks.length).toBe(seen);
    expect(seen).toBeLessThan(1000);
  });

  it('resolves at once for an empty schedule', async () => {
    const p = pace(new Float64Array(0), () => {
      throw new Error('no tick expected');
    });
    await p.done;
    await p.stop();
  });
});
