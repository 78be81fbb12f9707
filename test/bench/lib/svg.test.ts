import { describe, expect, it } from 'vitest';
import { barChart, cdfChart, escapeXml, lineChart, makeScale, niceTicks } from '../../../bench/lib/svg.js';

/** Tags open and close in order (a cheap well-formedness check). */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
    const [, closing, tag, selfClosing] = m;
    if (selfClosing) continue;
    if (!closing) stack.push(tag);
    else if (stack.pop() !== tag) return false;
  }
  return stack.length === 0;
}

describe('svg charts', () => {
  it('picks round ticks', () => {
    expect(niceTicks(0, 10)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(3, 3)).toEqual([3]);
    const log = makeScale(1, 1000, 0, 300, true);
    expect(log.ticks).toEqual([1, 10, 100, 1000]);
    expect(log(10)).toBeCloseTo(100);
    const lin = makeScale(0, 10, 100, 0);
    expect(lin(5)).toBe(50);
  });

  it('escapes text', () => {
    expect(escapeXml('a<b & "c">')).toBe('a&lt;b &amp; &quot;c&quot;&gt;');
  });

  it('draws bars with labels, a legend and escaped names', () => {
    const svg = barChart({
      title: 'Throughput <GB/s>',
      categories: ['1k', '8k'],
      series: [
        { name: 'native & fast', values: [5, 8] },
        { name: 'reference', values: [0.1, null] },
      ],
      yLabel: 'GB/s',
      logY: true,
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(balanced(svg)).toBe(true);
    expect(svg).toContain('Throughput &lt;GB/s&gt;');
    expect(svg).toContain('native &amp; fast');
    expect(svg.match(/<rect x=/g)).toHaveLength(3); // the null value leaves a gap
    expect(svg).toContain('>0.1<');
  });

  it('draws lines on log axes and CDFs as steps, skipping points a log axis cannot show', () => {
    const svg = lineChart({
      title: 'Latency',
      xLabel: 'tokens',
      yLabel: 'us',
      logX: true,
      logY: true,
      markers: true,
      series: [
        { name: 'a', points: [[0, 1], [10, 2], [100, 20]] },
        { name: 'b', points: [[10, 3], [100, Number.NaN]], dashed: true },
      ],
    });
    expect(balanced(svg)).toBe(true);
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain('stroke-dasharray');
    const cdf = cdfChart({ title: 'CDF', xLabel: 'us', series: [{ name: 'x', values: [1, 2, 3, 4] }] });
    expect(balanced(cdf)).toBe(true);
    expect(cdf).toMatch(/d="M[\d.]+,[\d.]+H/);
  });
});
