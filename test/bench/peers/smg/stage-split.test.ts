import { describe, expect, it } from 'vitest';
import { attribute, STAGES, type StageRow } from '../../../../bench/peers/smg/stage-split.js';

/** A request whose stages take `ms` each (ns times), starting at `at` ms. */
function row(at: number, ms: readonly number[]): StageRow {
  const keys = ['sent', 'recv', 'body', 'create', 'headers', 'written', 'head', 'ended', 'done'] as const;
  const r: Record<string, number> = { round: 0 };
  let t = at * 1e6;
  keys.forEach((k, i) => {
    if (i > 0) t += ms[i - 1] * 1e6;
    r[k] = t;
  });
  return r as unknown as StageRow;
}

describe('the stage split', () => {
  it('puts the slowest requests excess in the stage that had it and counts the GC pauses they overlap', () => {
    const usual = [0.1, 0.01, 0.1, 0.02, 0.03, 0.1, 0.07, 0.08];
    const rows = Array.from({ length: 200 }, (_, i) => row(i * 2, usual));
    // Two slow requests: 2 ms more in the engine leg, one of them over a 1.5 ms GC pause.
    rows[50] = row(
      100,
      usual.map((x, i) => (STAGES[i].name.startsWith('engine leg') ? x + 2 : x)),
    );
    rows[51] = row(
      102,
      usual.map((x, i) => (STAGES[i].name.startsWith('engine leg') ? x + 2 : x)),
    );
    const gc = [100.3e6, 1.5e6, 1, 0, 300.1e6, 0.2e6, 1, 0];
    const a = attribute(rows, gc, 4);
    const stage = (name: string) => a.stages.find((s) => s.name.startsWith(name))!;
    expect(stage('engine leg').p50).toBeCloseTo(0.1, 6);
    expect(stage('engine leg').tailMean - stage('engine leg').p50).toBeCloseTo(2, 6);
    expect(stage('router: body -> engine call').tailMean).toBeCloseTo(0.1, 6);
    expect(stage('own').p50).toBeCloseTo(0.1 + 0.02 + 0.03 + 0.07, 6);
    expect(stage('total').p50).toBeCloseTo(0.51, 6);
    expect(a.tailCount).toBe(2);
    expect(a.tailWithGc).toBe(1);
    expect(a.allWithGc).toBe(2); // the request at 300 ms overlaps the second pause
    expect(a.gcCount).toBe(2);
    expect(a.gcMaxMs).toBeCloseTo(1.5, 6);
  });

  it('leaves out the stages a request has no time for', () => {
    const r = row(0, [0.1, 0.01, 0.1, 0.02, 0.03, 0.1, 0.07, 0.08]) as unknown as Record<string, number>;
    r.headers = Number.NaN;
    const a = attribute([r as unknown as StageRow], [], 4);
    expect(Number.isNaN(a.stages.find((s) => s.name.includes('head built'))!.p50)).toBe(true);
    expect(a.stages.find((s) => s.name.startsWith('engine leg'))!.p50).toBeCloseTo(0.1, 6);
  });
});
