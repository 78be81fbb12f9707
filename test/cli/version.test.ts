import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/util/package-version.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const version = (JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { version: string }).version;
const kvroute = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: root, encoding: 'utf8' });

describe('kvroute --version', () => {
  it("reads the package's version", () => {
    expect(packageVersion()).toBe(version);
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('prints it for --version and -v, and the usage names the flag', () => {
    for (const flag of ['--version', '-v']) {
      const r = kvroute(flag);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
    expect(kvroute('--help').stdout).toContain('kvroute --version');
  });
});
