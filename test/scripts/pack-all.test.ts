// `npm run pack:all -- --local-build --no-build` as a user runs it in a clone: the tarballs of
// kvroute and of this machine's platform package, from the clone's own addon (no cross toolchain),
// each carrying LICENSE, the main one with no script npm would run on install, and each accepted
// by `npm publish --dry-run`.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_BUILD_PATH, PREBUILT_PLATFORMS, platformCandidates, prebuiltPackageName } from '../../src/core/native-loader.mjs';
import { REPO_ROOT, platformBinaryPath } from '../../scripts/prebuilt-targets.js';

const run = promisify(execFile);
const host = platformCandidates()[0];
const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const packAll = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'scripts/pack-all.ts', ...args], { cwd: REPO_ROOT, encoding: 'utf8' });
const readFromTarball = (tarball: string, path: string) => execFileSync('tar', ['-xOzf', tarball, `package/${path}`], { encoding: 'utf8' });
const listTarball = (tarball: string) => execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n');

// npm runs these of a dependency (prepare too, for git and folder dependencies) and npm 11 warns of them.
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'];

describe('the LICENSE', () => {
  it('is the Apache License 2.0 that package.json names', () => {
    const license = readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8');
    expect(JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(license).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(license).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    expect(license).toContain('END OF TERMS AND CONDITIONS');
  });
});

describe.skipIf(!PREBUILT_PLATFORMS.includes(host))(`npm run pack:all -- --local-build --no-build (${host})`, () => {
  let out: string;
  let stdout: string;
  let mainTarball: string;
  let bindingTarball: string;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'kvroute-pack-'));
    ({ stdout } = await packAll(['--local-build', '--no-build', '--out', out]));
    mainTarball = join(out, `kvroute-${version}.tgz`);
    bindingTarball = join(out, `kvroute-binding-${host}-${version}.tgz`);
  }, 120_000);

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it("packs kvroute and this platform's package alone, its binary the clone's own build", () => {
    const written = stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/)[0]);
    expect(written).toEqual([mainTarball, bindingTarball]);
    const manifest = JSON.parse(readFromTarball(bindingTarball, 'package.json')) as { name: string; main: string };
    expect(manifest.name).toBe(prebuiltPackageName(host));
    const shipped = execFileSync('tar', ['-xOzf', bindingTarball, `package/${manifest.main}`], { maxBuffer: 256 * 1024 * 1024 });
    expect(shipped.equals(readFileSync(LOCAL_BUILD_PATH))).toBe(true);
  });

  it('ships a main package that runs no script on install', () => {
    const manifest = JSON.parse(readFromTarball(mainTarball, 'package.json')) as {
      scripts?: Record<string, string>;
      optionalDependencies: Record<string, string>;
    };
    for (const script of INSTALL_SCRIPTS) expect(manifest.scripts?.[script], script).toBeUndefined();
    expect(manifest.scripts).toBeUndefined();
    expect(Object.keys(manifest.optionalDependencies).sort()).toEqual(PREBUILT_PLATFORMS.map(prebuiltPackageName).sort());
  });

  it('puts the LICENSE in every tarball', () => {
    const license = readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8');
    for (const tarball of [mainTarball, bindingTarball]) {
      expect(listTarball(tarball), tarball).toContain('package/LICENSE');
      expect(readFromTarball(tarball, 'LICENSE'), tarball).toBe(license);
    }
  });

  it('makes tarballs that `npm publish --dry-run` accepts', async () => {
    for (const tarball of [mainTarball, bindingTarball]) {
      const { stderr } = await run('npm', ['publish', '--dry-run', tarball], { cwd: out, encoding: 'utf8' });
      expect(stderr).toContain('(dry-run)');
      expect(stderr).not.toMatch(/npm (warn|error) (?!publish This command requires you to be logged in)/i);
    }
  }, 120_000);

  // A platform not cross-built in this clone (build:prebuilt puts its binary in npm/<platform>/).
  const other = PREBUILT_PLATFORMS.find((p) => p !== host && !existsSync(platformBinaryPath(p)));
  it.skipIf(other === undefined)('refuses a platform without a binary, naming both ways to get one', async () => {
    const failure = await packAll(['--no-build', '--only', other as string, '--out', out]).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toMatch(
      new RegExp(
        `^pack:all: no binary for ${other as string} at .*: run \`npm run build:prebuilt\` first, or pack this machine's own build with --local-build\\n$`,
      ),
    );
  });
});
