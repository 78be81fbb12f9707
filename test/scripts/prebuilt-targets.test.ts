import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PREBUILT_PLATFORMS, prebuiltPackageName } from '../../src/core/native-loader.mjs';
import { checkPlatformManifests, publishedManifest } from '../../scripts/pack.js';
import { PREBUILT_TARGETS, REPO_ROOT, readPlatformManifest } from '../../scripts/prebuilt-targets.js';

const rootManifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<string, unknown> & { version: string };
const NPM_CPU: Record<string, string> = { x64: 'x64', arm64: 'arm64' };
const NPM_LIBC: Record<string, string> = { gnu: 'glibc', musl: 'musl' };

describe('the prebuilt platforms', () => {
  it('are the same in the loader, the release build and npm/', () => {
    expect(Object.keys(PREBUILT_TARGETS).sort()).toEqual([...PREBUILT_PLATFORMS].sort());
    const dirs = readdirSync(join(REPO_ROOT, 'npm'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(dirs.sort()).toEqual([...PREBUILT_PLATFORMS].sort());
  });

  it('have packages whose name, version, os, cpu and libc match the platform, shipping one .node file', () => {
    expect(() => checkPlatformManifests(rootManifest.version)).not.toThrow();
    for (const platform of PREBUILT_PLATFORMS) {
      const [os, cpu, libc] = platform.split('-');
      const m = readPlatformManifest(platform) as ReturnType<typeof readPlatformManifest> & { files: string[] };
      expect(m.name).toBe(prebuiltPackageName(platform));
      expect(m.version).toBe(rootManifest.version);
      expect(m.os).toEqual([os]);
      expect(m.cpu).toEqual([NPM_CPU[cpu]]);
      expect(m.libc).toEqual([NPM_LIBC[libc]]);
      expect(m.main).toBe(`kvroute.${platform}.node`);
      expect(m.files).toEqual([m.main]);
      expect(PREBUILT_TARGETS[platform].rustTarget).toMatch(new RegExp(`^${cpu === 'x64' ? 'x86_64' : 'aarch64'}-unknown-linux-${libc}$`));
    }
  });

  it('are refused when a platform package drifts from the main version', () => {
    expect(() => checkPlatformManifests('9.9.9')).toThrow(/version 0\.1\.0, expected 9\.9\.9/);
  });

  it('are every optional dependency of the published main package, at its exact version, which has no scripts', () => {
    const published = publishedManifest(rootManifest);
    expect(published.optionalDependencies).toEqual(Object.fromEntries(PREBUILT_PLATFORMS.map((p) => [prebuiltPackageName(p), rootManifest.version])));
    expect({ ...published, optionalDependencies: undefined }).toEqual({ ...rootManifest, optionalDependencies: undefined, scripts: undefined });
    // The repository's own manifest cannot list them (npm ci would need them on the registry).
    expect(rootManifest.optionalDependencies).toBeUndefined();
  });
});
