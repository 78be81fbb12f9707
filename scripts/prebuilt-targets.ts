// The prebuilt platforms and how each is cross-built: the one table the release scripts read.
// Its keys must equal the runtime loader's PREBUILT_PLATFORMS and the npm/<platform>/ folders
// (test/scripts/prebuilt-targets.test.ts checks both).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PrebuiltTarget {
  /** Rust target triple (the output folder under native/target). */
  rustTarget: string;
  /** What cargo-zigbuild is given: glibc targets carry the oldest glibc the binary may need. */
  zigTarget: string;
  /** Extra rustflags for this target only. */
  rustflags?: string;
  /** `readelf -h` Machine of the binary. */
  elfMachine: string;
  /** Shared libraries the binary may need, and nothing else. */
  allowedNeeded: readonly string[];
  /** Highest GLIBC_x.y symbol version the binary may require (glibc targets). */
  maxGlibc?: string;
}

// Rust's std needs glibc 2.17 at least; Node 20's own Linux builds need 2.28, so 2.17 never
// narrows where kvroute runs.
const GLIBC = '2.17';
const glibcLibs = (loader: string) => [loader, 'libc.so.6', 'libm.so.6', 'libgcc_s.so.1', 'libpthread.so.0', 'libdl.so.2', 'librt.so.1'];
// A cdylib on musl must link libc dynamically (Rust's musl targets default to a static CRT, which a
// library loaded into Node cannot use).
const MUSL_RUSTFLAGS = '-C target-feature=-crt-static';

export const PREBUILT_TARGETS: Readonly<Record<string, PrebuiltTarget>> = {
  'linux-x64-gnu': {
    rustTarget: 'x86_64-unknown-linux-gnu',
    zigTarget: `x86_64-unknown-linux-gnu.${GLIBC}`,
    elfMachine: 'Advanced Micro Devices X86-64',
    allowedNeeded: glibcLibs('ld-linux-x86-64.so.2'),
    maxGlibc: GLIBC,
  },
  'linux-x64-musl': {
    rustTarget: 'x86_64-unknown-linux-musl',
    zigTarget: 'x86_64-unknown-linux-musl',
    rustflags: MUSL_RUSTFLAGS,
    elfMachine: 'Advanced Micro Devices X86-64',
    allowedNeeded: ['libc.so'],
  },
  'linux-arm64-gnu': {
    rustTarget: 'aarch64-unknown-linux-gnu',
    zigTarget: `aarch64-unknown-linux-gnu.${GLIBC}`,
    elfMachine: 'AArch64',
    allowedNeeded: glibcLibs('ld-linux-aarch64.so.1'),
    maxGlibc: GLIBC,
  },
  'linux-arm64-musl': {
    rustTarget: 'aarch64-unknown-linux-musl',
    zigTarget: 'aarch64-unknown-linux-musl',
    rustflags: MUSL_RUSTFLAGS,
    elfMachine: 'AArch64',
    allowedNeeded: ['libc.so'],
  },
};

export const REPO_ROOT = join(import.meta.dirname, '..');

/** The package folder of a platform: npm/<platform>/ (package.json, README.md, and the built .node). */
export function platformDir(platform: string): string {
  return join(REPO_ROOT, 'npm', platform);
}

export interface PlatformManifest {
  name: string;
  version: string;
  main: string;
  os: string[];
  cpu: string[];
  libc?: string[];
}

export function readPlatformManifest(platform: string): PlatformManifest {
  return JSON.parse(readFileSync(join(platformDir(platform), 'package.json'), 'utf8')) as PlatformManifest;
}

/** Where the release build puts a platform's binary (the platform package's `main`). */
export function platformBinaryPath(platform: string): string {
  return join(platformDir(platform), readPlatformManifest(platform).main);
}
