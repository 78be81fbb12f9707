import { describe, expect, it } from 'vitest';
import { advantage, completeFigure, expectSuite, expectSuiteResult, targetVerdict } from '../../../bench/lib/suite.js';

describe('suite contract', () => {
  it('completes figures from their reference and target', () => {
    const f = completeFigure({ name: 'p99', value: 5, unit: 'us', reference: { name: 'ts', value: 50 }, target: { op: '<=', value: 10 } });
    expect(f).toMatchObject({ ratio: 0.1, better: 'lower', met: true });
    expect(advantage(f)).toBe(10);
    const g = completeFigure({ name: 'rate', value: 3, unit: 'GB/s', reference: { name: 'ts', value: 1 }, target: { op: '>=', value: 5 } });
    expect(g).toMatchObject({ ratio: 3, better: 'higher', met: false });
    expect(advantage(g)).toBe(3);
    const h = completeFigure({ name: 'x', value: 1, unit: '', reference: { name: 'ts', value: 0 } });
    expect(h.ratio).toBeUndefined();
    expect(advantage(h)).toBeUndefined();
    expect(completeFigure({ name: 'n', value: Number.NaN, unit: '', target: { op: '>=', value: 1 } }).met).toBe(false);
  });

  it('never calls a magnitude measured negative a met target: it is below noise', () => {
    // An overhead p99 of -13 ms: the routed run was "faster" than the direct one, i.e. noise.
    const overhead = completeFigure({ name: 'overhead p99', value: -13, unit: 'ms', reference: { name: 'direct', value: 2 }, target: { op: '<=', value: 1 } });
    expect(overhead.belowNoise).toBe(true);
    expect(overhead.met).toBeUndefined();
    expect(overhead.ratio).toBeUndefined();
    expect(advantage(overhead)).toBeUndefined();
    expect(targetVerdict(overhead)).toBe('below noise');
    // Without a target, too (no ratio to a reference either).
    expect(completeFigure({ name: 'overhead p50', value: -0.2, unit: 'ms' }).belowNoise).toBe(true);
    // A figure declared signed may be negative, and its target is judged as usual.
    const change = completeFigure({ name: 'TTFT change', value: -13, unit: 'ms', signed: true, target: { op: '<=', value: 0 } });
    expect(change.belowNoise).toBeUndefined();
    expect(targetVerdict(change)).toBe('met');
    // Zero and positive magnitudes are measurements.
    expect(targetVerdict(completeFigure({ name: 'p99', value: 0, unit: 'ms', target: { op: '<=', value: 1 } }))).toBe('met');
    expect(targetVerdict(completeFigure({ name: 'p99', value: 2, unit: 'ms', target: { op: '<=', value: 1 } }))).toBe('missed');
    expect(targetVerdict(completeFigure({ name: 'p99', value: 2, unit: 'ms' }))).toBeUndefined();
  });

  it('refuses malformed suites and results with a message naming them', () => {
    expect(() => expectSuite(undefined, 'x.ts')).toThrow(/x.ts must export/);
    expect(() => expectSuite({ name: 'Bad Name', title: 't', run() {} }, 'x.ts')).toThrow(/name/);
    expect(() => expectSuite({ name: 'ok', title: 't' }, 'x.ts')).toThrow(/run/);
    expect(expectSuite({ name: 'ok', title: 't', run: async () => ({ figures: [] }) }, 'x.ts').name).toBe('ok');
    expect(expectSuite({ name: 'ok', title: 't', nodeFlags: ['--max-semi-space-size=8'], run: async () => ({ figures: [] }) }, 'x.ts').nodeFlags).toEqual([
      '--max-semi-space-size=8',
    ]);
    expect(() => expectSuite({ name: 'ok', title: 't', nodeFlags: ['max-semi-space-size=8'], run: async () => ({ figures: [] }) }, 'x.ts')).toThrow(
      /nodeFlags/,
    );
    expect(() => expectSuiteResult(null, 's')).toThrow(/figures/);
    expect(() => expectSuiteResult({ figures: [{ name: 'a', value: '1', unit: 'us' }] }, 's')).toThrow(/value \(number\)/);
    expect(() => expectSuiteResult({ figures: [{ name: 'a', value: 1, unit: 'us', target: { op: '<', value: 1 } }] }, 's')).toThrow(/target/);
    expect(() => expectSuiteResult({ figures: [], charts: [{ name: 'A B', title: 't', svg: '<svg/>' }] }, 's')).toThrow(/charts/);
    expect(() =>
      expectSuiteResult(
        {
          figures: [],
          charts: [
            { name: 'a', title: 't', svg: '<svg/>' },
            { name: 'a', title: 'u', svg: '<svg/>' },
          ],
        },
        's',
      ),
    ).toThrow(/unique/);
    expect(() => expectSuiteResult({ figures: [], sections: [{ title: 1 }] }, 's')).toThrow(/sections/);
  });
});
