// Headless Chromium (Debian's `chromium` package) driven by playwright-core, for the tests of the
// live page. Absent chromium: those tests skip with a message, except under CI (CI set), where
// they must run (.ci/run installs it).
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.KVROUTE_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_SKIP_REASON: string | null =
  existsSync(CHROMIUM_PATH) || process.env.CI
    ? null
    : `chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium; .ci/run installs it): the live page's browser test is skipped`;

if (CHROMIUM_SKIP_REASON) console.warn(`SKIPPED: ${CHROMIUM_SKIP_REASON}`);

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}
