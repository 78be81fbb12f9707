// The live page in a real browser: headless Chromium loads GET /dashboard from a router in front
// of a simulated fleet, and the DOM shows every worker of each pool and, after a request, its
// routing decision with the explanation (candidates and costs). A screenshot is written for a
// person to look at (its path is printed).
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../../helpers/chromium.js';
import { MODEL, startTestRouter, type TestRouter } from '../helpers/router.js';

const SCREENSHOTS = process.env.KVROUTE_SCREENSHOT_DIR ?? join(tmpdir(), 'kvroute-screenshots');

describe.skipIf(CHROMIUM_SKIP_REASON !== null)('GET /dashboard in headless Chromium', () => {
  let t: TestRouter;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestRouter({ prefill: 1, decode: 2, speedup: 20 });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('shows the workers of each pool, then a request and its decision, live', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    await page.goto(`${t.url}/dashboard`);

    // The workers, by pool, as the registry has them.
    await page.waitForSelector('#pool-prefill tr.worker');
    const workerIds = (pool: string) => page.$$eval(`#pool-${pool} tr.worker`, (rows) => rows.map((r) => Number(r.getAttribute('data-worker'))));
    expect(await workerIds('prefill')).toEqual(t.fleet.workers.filter((w) => w.role === 'prefill').map((w) => w.id));
    expect(await workerIds('decode')).toEqual(t.fleet.workers.filter((w) => w.role !== 'prefill').map((w) => w.id));
    expect(await page.textContent('#status')).toBe('ready');
    expect(await page.textContent('#decisions tbody')).toContain('no request routed yet');

    // Requests sharing a prefix (the second finds the first's blocks), then the page's next poll.
    const prompt = 'A live page of the fleet polls the router for its state. '.repeat(6);
    for (const id of ['live-page-1', 'live-page-2']) {
      const res = await fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: MODEL, prompt, max_tokens: 8, stream: true }),
      });
      await res.text();
      expect(res.status).toBe(200);
    }
    const row = page.locator('tr.decision[data-request="live-page-2"]');
    await row.waitFor({ timeout: 10_000 });
    // Finished: its mode cell no longer says (running).
    await row.locator('td', { hasText: 'end' }).waitFor({ timeout: 10_000 });
    const cells = await row.locator('td').allTextContents();
    expect(cells[2]).toBe('disaggregated');
    expect(cells[3]).toBe('unconditional');
    const prefillWorker = Number(cells[4]);
    const decodeWorker = Number(cells[5]);
    expect(t.fleet.workers.find((w) => w.id === prefillWorker)?.role).toBe('prefill');
    expect(t.fleet.workers.find((w) => w.id === decodeWorker)?.role).toBe('decode');
    expect(Number(cells[6]), 'overlap blocks of the repeated prompt').toBeGreaterThan(0);
    expect(cells[11]).toBe('end');

    // The explanation: each leg's candidates and their costs.
    await row.click();
    const explain = page.locator('tr.explain');
    await explain.waitFor();
    const text = await explain.textContent();
    expect(text).toContain(`prefill leg: policy ttft chose worker ${prefillWorker}`);
    expect(text).toContain(`decode leg: policy ttft chose worker ${decodeWorker}`);
    expect(await explain.locator('tbody tr').count()).toBeGreaterThanOrEqual(2);

    // The booked load and index columns read the router's own state: the prompt's blocks are indexed.
    const indexed = await page.$$eval('#pool-prefill tr.worker td:last-child', (tds) => tds.map((td) => Number(td.textContent!.replace(/,/g, ''))));
    expect(Math.max(...indexed)).toBeGreaterThan(0);
    expect(await page.textContent('#k-rps')).not.toBe('–');

    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = join(SCREENSHOTS, 'dashboard.png');
    await page.screenshot({ path: file, fullPage: true });
    console.log(`live page screenshot: ${file}`);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
