// `npm run pack:all [-- --out DIR] [--only linux-x64-gnu,...] [--no-build] [--local-build]`: builds,
// then packs kvroute and its platform packages into DIR (default release/), and prints their sizes.
// --local-build ships this clone's own addon (native/kvroute.node, from `npm install` or
// `npm run build:native`) as this machine's platform package, so no cross toolchain is needed;
// without --only it then packs that platform alone.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LOCAL_BUILD_PATH, PREBUILT_PLATFORMS, platformCandidates } from '../src/core/native-loader.mjs';
import { buildPackage, packAll } from './pack.js';
import { PREBUILT_TARGETS, REPO_ROOT } from './prebuilt-targets.js';
import { verifyBinary } from './verify-binary.js';

/** This machine's platform and its own build, checked as a release binary is, except for the glibc floor. */
function localBuild(): { platform: string; binary: string } {
  const platform = platformCandidates()[0];
  if (!PREBUILT_PLATFORMS.includes(platform))
    throw new Error(`--local-build: ${platform} has no platform package (prebuilt: ${PREBUILT_PLATFORMS.join(', ')})`);
  const report = verifyBinary(LOCAL_BUILD_PATH, PREBUILT_TARGETS[platform]);
  const problems = report.problems.filter((p) => !p.startsWith('requires GLIBC_'));
  if (problems.length > 0) throw new Error(`--local-build: ${LOCAL_BUILD_PATH}: ${problems.join('; ')}`);
  if (report.glibc !== undefined && report.problems.length > 0) {
    // A native build links against this machine's glibc: say where its package will load.
    console.warn(
      `${platform}: this machine's build needs GLIBC_${report.glibc} (a release's cross build needs ${PREBUILT_TARGETS[platform].maxGlibc}); it loads on glibc ${report.glibc} or newer`,
    );
  }
  return { platform, binary: LOCAL_BUILD_PATH };
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string', default: join(REPO_ROOT, 'release') },
      only: { type: 'string' },
      'no-build': { type: 'boolean' },
      'local-build': { type: 'boolean' },
    },
  });
  // Built first: --local-build checks the binary the build makes.
  if (!values['no-build']) buildPackage();
  let platforms = values.only?.split(',');
  let binaries: Record<string, string> | undefined;
  if (values['local-build']) {
    const local = localBuild();
    platforms ??= [local.platform];
    binaries = { [local.platform]: local.binary };
  }
  const result = packAll({ outDir: values.out, platforms, binaries, build: false });
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  for (const t of [result.main, ...result.platforms]) {
    console.log(`${t.file}  ${kib(t.size)} packed, ${kib(t.unpackedSize)} unpacked, ${t.entryCount} files`);
  }
}

try {
  main(process.argv.slice(2));
} catch (err) {
  console.error(`pack:all: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
