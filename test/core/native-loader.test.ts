import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  LOCAL_BUILD_PATH,
  NativeBindingError,
  PREBUILT_PLATFORMS,
  detectLibc,
  loadNative,
  platformCandidates,
  prebuiltPackageName,
} from '../../src/core/native-loader.mjs';

const dir = mkdtempSync(join(tmpdir(), 'kvroute-loader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const notInstalled = (name: string): string => {
  throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
};
const sequenceHashesInto = (binding: unknown) =>
  (binding as { computeSequenceHashesInto(a: BigUint64Array, b: BigUint64Array): void }).computeSequenceHashesInto;

describe('platformCandidates', () => {
  it('names Linux binaries by cpu and libc, and tries both libcs when the libc is unknown', () => {
    expect(platformCandidates({ platform: 'linux', arch: 'x64', libc: 'gnu' })).toEqual(['linux-x64-gnu']);
    expect(platformCandidates({ platform: 'linux', arch: 'arm64', libc: 'musl' })).toEqual(['linux-arm64-musl']);
    expect(platformCandidates({ platform: 'linux', arch: 'x64', libc: null })).toEqual(['linux-x64-gnu', 'linux-x64-musl']);
    expect(platformCandidates({ platform: 'darwin', arch: 'arm64' })).toEqual(['darwin-arm64']);
  });

  it("detects this machine's libc as npm does (glibc here: /usr/bin/ldd is GNU's)", () => {
    expect(detectLibc('darwin')).toBeUndefined();
    const expected = process.report.getReport() as { header: { glibcVersionRuntime?: string } };
    expect(detectLibc()).toBe(expected.header.glibcVersionRuntime ? 'gnu' : 'musl');
  });

  it('maps every prebuilt platform to a package of the @kvroute scope', () => {
    expect(PREBUILT_PLATFORMS).toEqual(expect.arrayContaining(['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu']));
    expect(prebuiltPackageName('linux-x64-musl')).toBe('@kvroute/binding-linux-x64-musl');
  });
});

describe('loadNative', () => {
  it('loads the local build in a checkout (the one the tests run against)', () => {
    const { origin, binding } = loadNative();
    expect(origin).toEqual({ kind: 'local', path: LOCAL_BUILD_PATH, packageName: undefined });
    expect(typeof sequenceHashesInto(binding)).toBe('function');
  });

  it('falls back to the platform package when there is no local build', () => {
    const resolved: string[] = [];
    const { origin } = loadNative({
      localPath: join(dir, 'absent.node'),
      candidates: ['linux-x64-gnu'],
      resolvePackage: (name) => {
        resolved.push(name);
        return LOCAL_BUILD_PATH; // stands in for the package's .node file
      },
    });
    expect(resolved).toEqual(['@kvroute/binding-linux-x64-gnu']);
    expect(origin).toEqual({ kind: 'prebuilt', path: LOCAL_BUILD_PATH, packageName: '@kvroute/binding-linux-x64-gnu' });
  });

  it('goes on to the package when the local build does not load, and says why when nothing does', () => {
    const broken = join(dir, 'broken.node');
    writeFileSync(broken, 'not a shared object');
    const { origin } = loadNative({ localPath: broken, candidates: ['linux-x64-gnu'], resolvePackage: () => LOCAL_BUILD_PATH });
    expect(origin.kind).toBe('prebuilt');

    let error: unknown;
    try {
      loadNative({ localPath: broken, candidates: ['linux-x64-gnu'], resolvePackage: () => broken });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(NativeBindingError);
    const message = (error as Error).message;
    expect(message).toContain('no native addon could be loaded for linux-x64-gnu');
    expect(message).toContain(`local build ${broken}: failed to load`);
    expect(message).toContain(`@kvroute/binding-linux-x64-gnu (${broken}): failed to load`);
    expect(message).toContain('npx kvroute build-native');
  });

  it('names the platform, the missing package and how to build from source', () => {
    const attempt = () => loadNative({ localPath: join(dir, 'absent.node'), candidates: ['linux-arm64-gnu'], resolvePackage: notInstalled });
    expect(attempt).toThrow(NativeBindingError);
    try {
      attempt();
    } catch (err) {
      const e = err as NativeBindingError;
      expect(e.code).toBe('KVROUTE_NATIVE_UNAVAILABLE');
      expect(e.platform).toBe('linux-arm64-gnu');
      expect(e.attempts).toEqual([
        { source: `local build ${join(dir, 'absent.node')}`, error: 'not built' },
        { source: '@kvroute/binding-linux-arm64-gnu', error: 'not installed' },
      ]);
      expect(e.message).toMatch(/--omit=optional/);
      expect(e.message).toMatch(/Rust toolchain .*rustup\.rs.*npx kvroute build-native/s);
    }
  });

  it('says when a platform has no prebuilt binary at all', () => {
    expect(() => loadNative({ localPath: join(dir, 'absent.node'), candidates: ['darwin-arm64'], resolvePackage: notInstalled })).toThrow(
      /there is no prebuilt native addon for darwin-arm64 .*prebuilt: linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, linux-arm64-musl\.[\s\S]*npx kvroute build-native/,
    );
  });
});
