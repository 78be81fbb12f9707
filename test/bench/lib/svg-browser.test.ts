// The report charts as a browser draws them: headless Chromium lays out the 11-series overload
// chart, and every text's box (legend labels, title, axes) lies inside the SVG's viewBox. Writes
// the chart as SVG and PNG for a person to look at (the paths are printed).
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { cdfChart } from '../../../bench/lib/svg.js';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../../helpers/chromium.js';
import { ELEVEN_SETUPS, legendEntries } from './svg-legend.js';

const OUT = process.env.KVROUTE_SCREENSHOT_DIR ?? join(tmpdir(), 'kvroute-screenshots');

describe.skipIf(CHROMIUM_SKIP_REASON !== null)('report charts in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('draws every label of an 11-series chart inside the viewBox, in 11 colours', async () => {
    // Log-normal-ish TTFTs, each setup slower than the one before.
    const series = ELEVEN_SETUPS.map((name, i) => ({
      name,
      values: Array.from({ length: 200 }, (_, k) => 50 * (1 + i * 0.6) * Math.exp(((k / 200) * 3) ** 1.3)),
    }));
    const svg = cdfChart({ title: 'TTFT of served requests at x4, synthetic trace, policy kv', xLabel: 'time to first token (ms)', logX: true, series });
    const page = await browser.newPage();
    await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
    // Drawn at its own size (width and height equal the viewBox's): screen boxes, rotations included, are user units.
    const boxes = await page.$$eval('svg text', (texts) => {
      const origin = texts[0].ownerSVGElement!.getBoundingClientRect();
      return texts.map((t) => {
        const b = t.getBoundingClientRect();
        return { text: t.textContent ?? '', x: b.left - origin.left, y: b.top - origin.top, right: b.right - origin.left, bottom: b.bottom - origin.top };
      });
    });
    const [, , width, height] = (await page.$eval('svg', (s) => s.getAttribute('viewBox')))!.split(' ').map(Number);
    const view = { width, height };
    const outside = boxes
      .filter((b) => b.x < 0 || b.y < 0 || b.right > view.width || b.bottom > view.height)
      .map((b) => `${b.text}: ${b.x.toFixed(0)}..${b.right.toFixed(0)} x ${b.y.toFixed(0)}..${b.bottom.toFixed(0)}`);
    expect(outside, `texts outside the ${view.width} x ${view.height} viewBox`).toEqual([]);
    const legend = legendEntries(svg);
    for (const name of ELEVEN_SETUPS)
      expect(
        boxes.some((b) => b.text === name),
        name,
      ).toBe(true);
    expect(new Set(legend.map((e) => e.color)).size).toBe(11);
    // No two legend labels overlap.
    const labels = boxes.filter((b) => ELEVEN_SETUPS.includes(b.text));
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        const a = labels[i];
        const b = labels[j];
        const overlap = a.x < b.right && b.x < a.right && a.y < b.bottom && b.y < a.bottom;
        expect(overlap, `${a.text} overlaps ${b.text}`).toBe(false);
      }
    }
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, 'overload-ttft-cdf.svg'), svg);
    await page.setViewportSize({ width: Math.ceil(view.width), height: Math.ceil(view.height) });
    await page.locator('svg').screenshot({ path: join(OUT, 'overload-ttft-cdf.png') });
    console.log(`chart: ${join(OUT, 'overload-ttft-cdf.svg')} and .png`);
    await page.close();
  }, 60_000);
});
