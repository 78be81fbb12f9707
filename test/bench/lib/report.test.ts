import { describe, expect, it } from 'vitest';
import { renderMarkdown, reportJson, stampOf, type BenchReport } from '../../../bench/lib/report.js';
import { completeFigure } from '../../../bench/lib/suite.js';

const machine = { cpus: 2, cpuModel: 'Test CPU', memoryGiB: 8, os: 'Linux x64', node: 'v20', commit: 'abc1234', dirty: false, loadAverage: [0.5, 0.4, 0.3] };

function report(extra: Partial<BenchReport> = {}): BenchReport {
  return {
    startedAt: '2025-01-31T12:34:56.789Z',
    finishedAt: '2025-01-31T12:35:56.789Z',
    quick: false,
    machine,
    suites: [
      {
        name: 'good',
        title: 'Good suite',
        ok: true,
        durationS: 1.5,
        figures: [{ name: 'rate | pipes', value: 2, unit: 'GB/s', reference: { name: 'ts', value: 4 }, ratio: 0.5, better: 'higher', headline: true }],
        sections: [{ title: 'How', markdown: 'measured carefully\n' }],
        charts: [{ name: 'c', title: 'A chart', svg: '<svg/>' }],
      },
      { name: 'bad', title: 'Bad suite', ok: false, error: 'exploded', durationS: 0.2, figures: [], sections: [], charts: [] },
    ],
    ...extra,
  };
}

describe('report', () => {
  it('names files by UTC time without colons', () => {
    expect(stampOf(new Date('2025-01-31T12:34:56.789Z'))).toBe('2025-01-31T12-34-56Z');
  });

  it('renders the machine, headline and per-suite tables, failures and chart links', () => {
    const md = renderMarkdown(report(), 'latest');
    expect(md).toContain('Run of 2025-01-31 12:34:56 UTC, full run; 2 cores (Test CPU)');
    expect(md).toContain('Load average at the start 0.5 / 0.4 / 0.3');
    expect(md).toContain('**Failed suites:** bad (exploded)');
    expect(md).toContain('| good | rate \\| pipes | **2 GB/s** | 4 GB/s (ts) | 2× worse |  |');
    expect(md).toContain('### How\n\nmeasured carefully\n');
    expect(md).toContain('![A chart](latest/good-c.svg)');
    expect(renderMarkdown(report({ quick: true, only: ['good'] }), 'x')).toContain('**quick run** (reduced sizes) of good');
  });

  it('reports a magnitude measured negative as below noise, never as a met target', () => {
    const overhead = completeFigure({ name: 'overhead p99', value: -13, unit: 'ms', target: { op: '<=', value: 1 }, headline: true });
    const md = renderMarkdown(
      report({ suites: [{ name: 'fe', title: 'Frontend', ok: true, durationS: 1, figures: [overhead], sections: [], charts: [] }] }),
      'x',
    );
    expect(md).toContain('| overhead p99 | **-13 ms** (below noise) |  |  | ≤ 1 ms not measurable: below noise |');
    expect(md).not.toMatch(/overhead p99 .*✓/);
  });

  it('keeps charts out of the JSON, as file names', () => {
    const json = reportJson(report(), '2025-01-31T12-34-56Z') as { suites: Array<{ charts: unknown[] }> };
    expect(json.suites[0].charts).toEqual([{ name: 'c', title: 'A chart', file: '2025-01-31T12-34-56Z/good-c.svg' }]);
  });
});
