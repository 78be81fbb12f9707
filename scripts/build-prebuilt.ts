// `npm run build:prebuilt [-- --only linux-x64-musl,...] [--install-toolchain]`: cross-builds the
// addon for every prebuilt platform with zig (cargo-zigbuild) from this one machine, puts each
// into its package folder (npm/<platform>/kvroute.<platform>.node) and checks it (verify-binary.ts).
// A release step, not a test step: CI builds only this machine's binary, with cargo.
import { spawnSync } from 'node:child_process';
import { copyFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PREBUILT_TARGETS, REPO_ROOT, platformBinaryPath } from './prebuilt-targets.js';
import { verifyBinary } from './verify-binary.js';

// The cross toolchain, pinned: zig from PyPI, cargo-zigbuild from crates.io.
const ZIGLANG_VERSION = '0.17.1';
const CARGO_ZIGBUILD_VERSION = '0.24.1';

const MANIFEST = join(REPO_ROOT, 'native', 'Cargo.toml');

function output(cmd: string, args: string[]): string | undefined {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function must(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): void {
  console.error(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit status ${r.status}`})`);
}

/** What is missing from the cross toolchain, each with the command that installs it. */
function missingToolchain(rustTargets: string[]): Array<{ what: string; install: [string, string[]] }> {
  const missing: Array<{ what: string; install: [string, string[]] }> = [];
  if (output('python3', ['-m', 'ziglang', 'version']) !== ZIGLANG_VERSION) {
    missing.push({ what: `zig ${ZIGLANG_VERSION} (PyPI ziglang)`, install: ['python3', ['-m', 'pip', 'install', `ziglang==${ZIGLANG_VERSION}`]] });
  }
  if (output('cargo-zigbuild', ['--version']) !== `cargo-zigbuild ${CARGO_ZIGBUILD_VERSION}`) {
    missing.push({
      what: `cargo-zigbuild ${CARGO_ZIGBUILD_VERSION}`,
      install: ['cargo', ['install', 'cargo-zigbuild', '--version', CARGO_ZIGBUILD_VERSION, '--locked']],
    });
  }
  const installed = new Set((output('rustup', ['target', 'list', '--installed']) ?? '').split('\n'));
  const absent = rustTargets.filter((t) => !installed.has(t));
  if (absent.length > 0) missing.push({ what: `Rust targets ${absent.join(', ')}`, install: ['rustup', ['target', 'add', ...absent]] });
  return missing;
}

const envName = (rustTarget: string) => `CARGO_TARGET_${rustTarget.toUpperCase().replace(/-/g, '_')}_RUSTFLAGS`;

function buildOne(platform: string): string {
  const target = PREBUILT_TARGETS[platform];
  // Stripped: symbols would triple the download and nobody debugs a prebuilt binary with them.
  const env: NodeJS.ProcessEnv = { ...process.env, CARGO_PROFILE_RELEASE_STRIP: 'symbols' };
  if (target.rustflags) env[envName(target.rustTarget)] = target.rustflags;
  must('cargo', ['zigbuild', '--release', '--locked', '--manifest-path', MANIFEST, '--target', target.zigTarget], env);
  const built = join(REPO_ROOT, 'native', 'target', target.rustTarget, 'release', 'libkvroute_native.so');
  const dest = platformBinaryPath(platform);
  copyFileSync(built, dest);
  return dest;
}

function main(argv: string[]): number {
  const { values } = parseArgs({ args: argv, options: { only: { type: 'string' }, 'install-toolchain': { type: 'boolean' } } });
  const platforms = values.only ? values.only.split(',') : Object.keys(PREBUILT_TARGETS);
  const unknown = platforms.filter((p) => !(p in PREBUILT_TARGETS));
  if (unknown.length > 0) {
    console.error(`unknown platform(s) ${unknown.join(', ')}; known: ${Object.keys(PREBUILT_TARGETS).join(', ')}`);
    return 2;
  }
  const missing = missingToolchain(platforms.map((p) => PREBUILT_TARGETS[p].rustTarget));
  if (missing.length > 0 && !values['install-toolchain']) {
    console.error('The cross toolchain is incomplete; install it with --install-toolchain, or:');
    for (const m of missing) console.error(`  ${m.what}: ${m.install[0]} ${m.install[1].join(' ')}`);
    return 1;
  }
  for (const m of missing) must(...m.install);

  let failed = 0;
  for (const platform of platforms) {
    const path = buildOne(platform);
    const report = verifyBinary(path, PREBUILT_TARGETS[platform]);
    const size = (statSync(path).size / 1024).toFixed(0);
    console.log(`${platform}: ${path} (${size} KiB)`);
    console.log(`  file: ${report.file}`);
    console.log(`  needs: ${report.needed.join(', ')}${report.glibc ? `; newest glibc symbol GLIBC_${report.glibc}` : ''}`);
    for (const p of report.problems) console.log(`  PROBLEM: ${p}`);
    if (report.problems.length > 0) failed++;
  }
  return failed > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
