import { describe, expect, it } from 'vitest';
import { barChart, cdfChart, escapeXml, lineChart, makeScale, niceTicks, PALETTE, seriesColors, textWidth } from '../../../bench/lib/svg.js';
import { ELEVEN_SETUPS, legendEntries, viewBoxOf } from './svg-legend.js';

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
        {
          name: 'a',
          points: [
            [0, 1],
            [10, 2],
            [100, 20],
          ],
        },
        {
          name: 'b',
          points: [
            [10, 3],
            [100, Number.NaN],
          ],
          dashed: true,
        },
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

describe('svg chart legends and colours', () => {
  const samples = (i: number) => Array.from({ length: 50 }, (_, k) => (k + 1) * (i + 1));

  it('gives each of 11 series its own colour and keeps every legend label inside the viewBox', () => {
    const svg = cdfChart({ title: 'TTFT under overload', xLabel: 'ms', logX: true, series: ELEVEN_SETUPS.map((name, i) => ({ name, values: samples(i) })) });
    const entries = legendEntries(svg);
    expect(entries.map((e) => e.name)).toEqual(ELEVEN_SETUPS);
    expect(new Set(entries.map((e) => e.color.toUpperCase())).size).toBe(11);
    // The curves are drawn in the legend's colours, one each.
    const strokes = [...svg.matchAll(/<path d="[^"]*" fill="none" stroke="(#[0-9A-Fa-f]{6})"/g)].map((m) => m[1]);
    expect(strokes).toEqual(entries.map((e) => e.color));
    const box = viewBoxOf(svg);
    for (const e of entries) {
      expect(e.x + textWidth(e.name), e.name).toBeLessThanOrEqual(box.width);
      expect(e.y + 8, e.name).toBeLessThanOrEqual(box.height);
      expect(e.x).toBeGreaterThanOrEqual(0);
    }
    expect(balanced(svg)).toBe(true);
  });

  it('keeps short legends on the right of a chart of the usual size', () => {
    const svg = lineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: 'kv',
          points: [
            [1, 1],
            [2, 2],
          ],
        },
        {
          name: 'round robin',
          points: [
            [1, 2],
            [2, 1],
          ],
        },
      ],
    });
    expect(viewBoxOf(svg)).toEqual({ width: 760, height: 420 });
    for (const e of legendEntries(svg)) expect(e.x).toBeGreaterThan(580);
  });

  it('never repeats a colour, even past the palette', () => {
    for (const n of [1, 8, 16, 17, 40]) expect(new Set(seriesColors(n)).size).toBe(n);
    expect(seriesColors(3)).toEqual(PALETTE.slice(0, 3));
    const bars = barChart({
      title: 'b',
      categories: ['a'],
      series: Array.from({ length: 20 }, (_, i) => ({ name: `series ${i}`, values: [i + 1] })),
      yLabel: 'y',
    });
    const fills = [...bars.matchAll(/<rect x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*" fill="(#[0-9A-Fa-f]{6})"/g)].map((m) => m[1]);
    expect(new Set(fills).size).toBe(20);
  });

  it('measures text with Helvetica metrics', () => {
    // 'iii' is narrow, 'WWW' wide; both scale with the size.
    expect(textWidth('WWW')).toBeGreaterThan(4 * textWidth('iii'));
    expect(textWidth('abc', 24)).toBeCloseTo(2 * textWidth('abc', 12));
  });
});
