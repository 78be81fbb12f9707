// Finds and loads kvroute's native addon. Plain ESM JavaScript because the hash pool's worker
// threads load the addon too and do not go through a TypeScript loader: src/core/binding.ts (the
// main thread's wrappers) and src/core/hash-batch.mjs (which the pool's workers run) both load it
// through here, so every thread gets the same file.
//
// Where the addon comes from, in order:
//   1. a local build, native/kvroute.node beside dist/ or src/: `npm run build:native` in a
//      checkout, `npx kvroute build-native` in an installed package. It only exists when someone
//      built it on purpose, so it wins: a contributor's fresh build is never shadowed by an
//      installed prebuilt binary.
//   2. the prebuilt package of this platform, @kvroute/binding-<platform>, which npm installs
//      from kvroute's optionalDependencies (it skips those whose os/cpu/libc do not match).
//   3. nothing: a NativeBindingError naming the platform, what was tried and how to build.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** Platforms with a prebuilt binary package: `<os>-<cpu>`, plus `-<libc>` on Linux. */
export const PREBUILT_PLATFORMS = Object.freeze(['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'linux-arm64-musl']);

/** Scope of the prebuilt binary packages (one npm package per platform, one .node file each). */
const PACKAGE_PREFIX = '@kvroute/binding-';

/**
 * The npm package that holds a platform's prebuilt binary.
 * @param {string} platform  e.g. 'linux-x64-gnu'
 */
export function prebuiltPackageName(platform) {
  return PACKAGE_PREFIX + platform;
}

/** Where a build from source puts the addon (same relative path from src/core and dist/core). */
export const LOCAL_BUILD_PATH = fileURLToPath(new URL('../../native/kvroute.node', import.meta.url));

/** What to do without a usable binary: shown in every NativeBindingError. */
export const BUILD_FROM_SOURCE_HINT =
  'To build it from source, install a Rust toolchain (https://rustup.rs: cargo must be on the PATH), then run ' +
  '`npx kvroute build-native` in your project (it compiles node_modules/kvroute/native/kvroute.node with cargo; ' +
  'in a clone of the repository, `npm run build:native`).';

/**
 * The C library of this Linux system as npm sees it when it honours the packages' `libc` field
 * (npm-install-checks reads /usr/bin/ldd, then falls back to Node's diagnostic report), so the
 * loader looks for the package npm chose to install. Not Linux: undefined; unknown: null.
 * @param {string} [platform]
 * @returns {'gnu' | 'musl' | null | undefined}
 */
export function detectLibc(platform = process.platform) {
  if (platform !== 'linux') return undefined;
  let ldd;
  try {
    ldd = readFileSync('/usr/bin/ldd', 'latin1');
  } catch {
    ldd = undefined;
  }
  if (ldd !== undefined) {
    if (ldd.includes('musl')) return 'musl';
    if (ldd.includes('GNU C Library')) return 'gnu';
    return null;
  }
  // No readable ldd (a minimal image): the report names glibc's version, or musl's loader.
  const report = /** @type {any} */ (process.report?.getReport());
  if (report?.header?.glibcVersionRuntime) return 'gnu';
  const objects = Array.isArray(report?.sharedObjects) ? report.sharedObjects : [];
  return objects.some((/** @type {string} */ f) => f.includes('ld-musl-') || f.includes('libc.musl-')) ? 'musl' : null;
}

/**
 * Names of this platform's binary, most likely first: `<os>-<cpu>-<libc>` on Linux (both libcs
 * when the libc is unknown), `<os>-<cpu>` elsewhere.
 * @param {{ platform?: string, arch?: string, libc?: 'gnu' | 'musl' | null }} [env]
 * @returns {string[]}
 */
export function platformCandidates(env = {}) {
  const platform = env.platform ?? process.platform;
  const arch = env.arch ?? process.arch;
  if (platform !== 'linux') return [`${platform}-${arch}`];
  const libc = 'libc' in env ? env.libc : detectLibc(platform);
  if (libc === 'gnu' || libc === 'musl') return [`linux-${arch}-${libc}`];
  return [`linux-${arch}-gnu`, `linux-${arch}-musl`];
}

/** No loadable native addon for this platform. */
export class NativeBindingError extends Error {
  /**
   * @param {string} platform
   * @param {ReadonlyArray<{ source: string, error: string }>} attempts
   */
  constructor(platform, attempts) {
    const prebuilt = PREBUILT_PLATFORMS.includes(platform);
    const lines = [
      prebuilt
        ? `kvroute: no native addon could be loaded for ${platform} (Node.js ${process.version}).`
        : `kvroute: there is no prebuilt native addon for ${platform} (Node.js ${process.version}); prebuilt: ${PREBUILT_PLATFORMS.join(', ')}.`,
      ...attempts.map((a) => `  - ${a.source}: ${a.error}`),
    ];
    if (prebuilt) {
      lines.push(
        `npm installs ${prebuiltPackageName(platform)} with kvroute unless optional dependencies are omitted ` +
          "(--omit=optional, --no-optional) or the lockfile was written by an npm that dropped other platforms' " +
          'optional packages: reinstall kvroute without those.',
      );
    }
    lines.push(BUILD_FROM_SOURCE_HINT);
    super(lines.join('\n'));
    this.name = 'NativeBindingError';
    this.code = 'KVROUTE_NATIVE_UNAVAILABLE';
    this.platform = platform;
    this.attempts = attempts;
  }
}

/**
 * Where the addon was loaded from.
 * @typedef {object} NativeOrigin
 * @property {'local' | 'prebuilt'} kind
 * @property {string} path  the .node file
 * @property {string | undefined} packageName  the prebuilt package, when kind is 'prebuilt'
 */

/** @type {{ binding: unknown, origin: NativeOrigin } | undefined} */
let loaded;

/**
 * Loads the addon once per thread (see the top of this file for the order).
 * @param {{ localPath?: string, candidates?: string[], resolvePackage?: (name: string) => string }} [options]
 *   for tests: another local build path, other platform names, another package resolver
 * @returns {{ binding: unknown, origin: NativeOrigin }}
 */
export function loadNative(options) {
  if (loaded && !options) return loaded;
  const localPath = options?.localPath ?? LOCAL_BUILD_PATH;
  const candidates = options?.candidates ?? platformCandidates();
  const resolvePackage = options?.resolvePackage ?? ((/** @type {string} */ name) => require.resolve(name));
  /** @type {{ source: string, error: string }[]} */
  const attempts = [];
  /** @type {{ binding: unknown, origin: NativeOrigin } | undefined} */
  let result;
  if (existsSync(localPath)) {
    try {
      result = { binding: require(localPath), origin: { kind: 'local', path: localPath, packageName: undefined } };
    } catch (err) {
      attempts.push({ source: `local build ${localPath}`, error: `failed to load: ${firstLine(err)}` });
    }
  } else {
    attempts.push({ source: `local build ${localPath}`, error: 'not built' });
  }
  for (const platform of result ? [] : candidates) {
    const packageName = prebuiltPackageName(platform);
    let path;
    try {
      path = resolvePackage(packageName);
    } catch (err) {
      const missing = /** @type {{ code?: string }} */ (err)?.code === 'MODULE_NOT_FOUND';
      attempts.push({ source: packageName, error: missing ? 'not installed' : `cannot be resolved: ${firstLine(err)}` });
      continue;
    }
    try {
      result = { binding: require(path), origin: { kind: 'prebuilt', path, packageName } };
      break;
    } catch (err) {
      attempts.push({ source: `${packageName} (${path})`, error: `failed to load: ${firstLine(err)}` });
    }
  }
  if (!result) throw new NativeBindingError(candidates[0], attempts);
  if (!options) loaded = result;
  return result;
}

/** @param {unknown} err */
function firstLine(err) {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n', 1)[0];
}
