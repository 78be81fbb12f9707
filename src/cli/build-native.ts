// `kvroute build-native`: compiles the native addon from the Rust sources shipped in the package,
// for platforms without a prebuilt binary (or to use a build of one's own). It only needs cargo:
// cargo builds the crate (native/build.rs sets the linker flags Node addons need), and the library
// is copied to native/kvroute.node, the local build the loader prefers. It imports nothing that
// loads the addon before it is built (the loader only once the build is done, to check it).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadNative } from '../core/native-loader.mjs';
import { UsageError } from './usage.js';

export const HELP = `usage: kvroute build-native [options]

Builds kvroute's native addon from source with cargo, into native/kvroute.node of the installed
package (used in preference to a prebuilt binary). Needs a Rust toolchain (https://rustup.rs) and
network access to crates.io for the crate's dependencies (pinned by native/Cargo.lock).

options:
  --debug        an unoptimized build (faster to compile, much slower to run)
  -h, --help     show this help`;

/** The package's root: dist/cli/ (or src/cli/) is two levels below it. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The file name cargo gives a cdylib crate named kvroute-native on each OS. */
export function cdylibName(platform: NodeJS.Platform): string {
  if (platform === 'win32') return 'kvroute_native.dll';
  if (platform === 'darwin') return 'libkvroute_native.dylib';
  return 'libkvroute_native.so';
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { debug: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'\n\n${HELP}`);

  const manifest = join(PACKAGE_ROOT, 'native', 'Cargo.toml');
  if (!existsSync(manifest)) throw new Error(`the Rust sources are missing (${manifest} not found)`);
  const cargo = process.env.CARGO ?? 'cargo';
  const version = spawnSync(cargo, ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) {
    throw new Error(
      `cargo was not found (${version.error?.message ?? `exit status ${version.status}`}): install a Rust toolchain from https://rustup.rs and run this again`,
    );
  }
  console.error(`kvroute: building the native addon with ${version.stdout.trim()} (a few minutes)`);

  // CARGO_TARGET_DIR, when set, is where cargo keeps its build (and compiled dependencies).
  const targetDir = process.env.CARGO_TARGET_DIR || join(PACKAGE_ROOT, 'native', 'target');
  const profile = values.debug ? 'debug' : 'release';
  const args = ['build', '--locked', '--manifest-path', manifest, '--target-dir', targetDir, ...(values.debug ? [] : ['--release'])];
  const build = spawnSync(cargo, args, { stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`cargo ${args.join(' ')} failed (${build.error?.message ?? `exit status ${build.status}`})`);

  const built = join(targetDir, profile, cdylibName(process.platform));
  const dest = join(PACKAGE_ROOT, 'native', 'kvroute.node');
  mkdirSync(join(PACKAGE_ROOT, 'native'), { recursive: true });
  copyFileSync(built, dest);
  const { origin } = loadNative();
  if (origin.path !== dest) throw new Error(`built ${dest}, but the loader picked ${origin.path}`);
  console.error(`kvroute: built ${dest}; it loads, and kvroute uses it from now on`);
  return 0;
}
