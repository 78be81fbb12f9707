// The tarballs a release publishes (`npm run pack:all`, scripts/pack-all.ts): kvroute itself and
// one @kvroute/binding-<platform> package per prebuilt platform (their binaries come from
// `npm run build:prebuilt`). The package install test packs through here too.
//
// The main package is packed from a staged copy whose package.json also lists every platform
// package as an exact-version optional dependency, as napi-rs's `napi pre-publish` does. The
// repository's own package.json cannot list them: they are not on the registry before the release
// that publishes them, and `npm ci` refuses a lockfile without them ("Missing: ... from lock file").
// The staged manifest has no scripts: `prepare` (the clone's build) would be an install script to
// npm, and the others name files the package does not ship. Every tarball carries LICENSE.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PREBUILT_PLATFORMS, prebuiltPackageName } from '../src/core/native-loader.mjs';
import { REPO_ROOT, platformBinaryPath, platformDir, readPlatformManifest } from './prebuilt-targets.js';

export interface PackedTarball {
  name: string;
  version: string;
  /** Absolute path of the .tgz. */
  file: string;
  /** Compressed and unpacked bytes. */
  size: number;
  unpackedSize: number;
  entryCount: number;
}

export interface PackOptions {
  /** Where the tarballs go (created if absent). */
  outDir: string;
  /** Platform packages to pack (default: every prebuilt platform). */
  platforms?: readonly string[];
  /** Binary to ship per platform instead of npm/<platform>/<main> (e.g. this machine's own build). */
  binaries?: Readonly<Record<string, string>>;
  /** Run `npm run build` (addon and TypeScript) before packing (default true). */
  build?: boolean;
}

interface NpmPackEntry {
  name: string;
  version: string;
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: Array<{ path: string }>;
}

function npmPack(args: string[], cwd: string): NpmPackEntry[] {
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out) as NpmPackEntry[];
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

/** The main package's manifest as published: the repository's plus the platform packages, less its scripts. */
export function publishedManifest(root: Record<string, unknown>): Record<string, unknown> {
  const version = root.version as string;
  const optionalDependencies: Record<string, string> = {};
  for (const platform of PREBUILT_PLATFORMS) optionalDependencies[prebuiltPackageName(platform)] = version;
  const { scripts: _scripts, ...published } = root;
  return { ...published, optionalDependencies };
}

/** Every platform package must carry the main package's version and its loader's name. */
export function checkPlatformManifests(version: string): void {
  for (const platform of PREBUILT_PLATFORMS) {
    const m = readPlatformManifest(platform);
    if (m.name !== prebuiltPackageName(platform)) throw new Error(`npm/${platform}/package.json: name ${m.name}, expected ${prebuiltPackageName(platform)}`);
    if (m.version !== version) throw new Error(`npm/${platform}/package.json: version ${m.version}, expected ${version} (the main package's)`);
  }
}

function packTo(stage: string, outDir: string): PackedTarball {
  const [entry] = npmPack(['--pack-destination', outDir], stage);
  return {
    name: entry.name,
    version: entry.version,
    file: join(outDir, entry.filename),
    size: entry.size,
    unpackedSize: entry.unpackedSize,
    entryCount: entry.entryCount,
  };
}

/** `npm run build`: the addon (cargo) and the TypeScript. */
export function buildPackage(): void {
  execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}

export function packAll(opts: PackOptions): { main: PackedTarball; platforms: PackedTarball[] } {
  const platforms = opts.platforms ?? PREBUILT_PLATFORMS;
  const unknown = platforms.filter((p) => !PREBUILT_PLATFORMS.includes(p));
  if (unknown.length > 0) throw new Error(`unknown platform(s) ${unknown.join(', ')}; prebuilt: ${PREBUILT_PLATFORMS.join(', ')}`);
  // Every binary first: a missing one fails before anything is packed.
  const binaries: Record<string, string> = {};
  for (const platform of platforms) {
    const binary = opts.binaries?.[platform] ?? platformBinaryPath(platform);
    if (!existsSync(binary)) {
      throw new Error(`no binary for ${platform} at ${binary}: run \`npm run build:prebuilt\` first, or pack this machine's own build with --local-build`);
    }
    binaries[platform] = binary;
  }
  const root = readJson(join(REPO_ROOT, 'package.json'));
  checkPlatformManifests(root.version as string);
  if (opts.build !== false) buildPackage();

  mkdirSync(opts.outDir, { recursive: true });
  const stageRoot = mkdtempSync(join(opts.outDir, '.stage-'));
  try {
    // The main package: exactly the files `npm pack` would take, with the published manifest.
    const mainStage = join(stageRoot, 'kvroute');
    const [listing] = npmPack(['--dry-run'], REPO_ROOT);
    for (const { path } of listing.files) {
      mkdirSync(dirname(join(mainStage, path)), { recursive: true });
      copyFileSync(join(REPO_ROOT, path), join(mainStage, path));
    }
    writeFileSync(join(mainStage, 'package.json'), `${JSON.stringify(publishedManifest(root), null, 2)}\n`);
    const main = packTo(mainStage, opts.outDir);

    const packed = platforms.map((platform) => {
      const binary = binaries[platform];
      const stage = join(stageRoot, platform);
      cpSync(platformDir(platform), stage, { recursive: true, filter: (src) => !src.endsWith('.node') });
      copyFileSync(binary, join(stage, readPlatformManifest(platform).main));
      copyFileSync(join(REPO_ROOT, 'LICENSE'), join(stage, 'LICENSE'));
      return packTo(stage, opts.outDir);
    });
    return { main, platforms: packed };
  } finally {
    rmSync(stageRoot, { recursive: true, force: true });
  }
}
