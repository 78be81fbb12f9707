// The packed package, installed as a user installs it: `npm install kvroute express` in a fresh
// project, with no cargo or rustc on the PATH, then an Express app routing a real completion
// through kvroute/server to a kvroute/sim worker. kvroute's optional dependency on this platform's
// binary package resolves through a loopback registry for the @kvroute scope (scoped-registry.ts)
// that serves every platform package's manifest and this machine's tarball, so npm chooses the
// binary by os/cpu/libc as it will from the public registry; everything else comes from the real
// registry. The binary is this checkout's own build (the cross builds are a release step).
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_BUILD_PATH, PREBUILT_PLATFORMS, platformCandidates, prebuiltPackageName } from '../../src/core/native-loader.mjs';
import { packAll, type PackedTarball } from '../../scripts/pack.js';
import { REPO_ROOT, readPlatformManifest } from '../../scripts/prebuilt-targets.js';
import { startScopedRegistry, type ScopedRegistry } from './scoped-registry.js';

const run = promisify(execFile);
const host = platformCandidates()[0];
const devDependencies = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
const RUST_TOOLS = ['cargo', 'rustc', 'rustup'];

/** The environment of a user without Rust: PATH minus every folder holding a Rust tool, no npm_* variables of the outer npm. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|CARGO|RUSTUP|RUSTC)/i.test(k)) env[k] = v;
  }
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => d && !RUST_TOOLS.some((t) => existsSync(join(d, t))));
  const nodeDir = dirname(process.execPath);
  if (RUST_TOOLS.some((t) => existsSync(join(nodeDir, t))))
    throw new Error(`node's own folder ${nodeDir} holds a Rust tool: cannot hide cargo from the install`);
  env.PATH = [nodeDir, ...dirs.filter((d) => d !== nodeDir)].join(delimiter);
  return env;
}

describe.skipIf(!PREBUILT_PLATFORMS.includes(host))(`the packed package installed in a fresh project (${host})`, () => {
  let work: string;
  let project: string;
  let registry: ScopedRegistry;
  let main: PackedTarball;
  let binding: PackedTarball;
  let env: NodeJS.ProcessEnv;
  let installMs: number;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kvroute-install-'));
    // The TypeScript as `prepare` builds it; the addon is the checkout's (npm ci built it).
    execFileSync('npm', ['run', 'build:ts'], { cwd: REPO_ROOT, stdio: 'ignore' });
    const packed = packAll({ outDir: join(work, 'tarballs'), platforms: [host], binaries: { [host]: LOCAL_BUILD_PATH }, build: false });
    main = packed.main;
    binding = packed.platforms[0];
    registry = await startScopedRegistry(
      PREBUILT_PLATFORMS.map((p) => ({ manifest: readPlatformManifest(p) as never, tarball: p === host ? binding.file : undefined })),
    );

    project = join(work, 'app');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'kvroute-user-app', private: true, type: 'module' }, null, 2)}\n`);
    writeFileSync(join(project, '.npmrc'), `@kvroute:registry=${registry.url}/\n`);
    cpSync(join(import.meta.dirname, 'user-app'), project, { recursive: true });
    for (const f of ['loaded-modules.mjs', 'module-log-hooks.mjs']) cpSync(join(import.meta.dirname, f), join(project, f));

    env = userEnv();
    const start = performance.now();
    // --ignore-scripts: no install script of kvroute or of any dependency may be needed for a
    // working install (npm 11 can hold back the scripts of dependencies nobody approved).
    const install = [
      'install',
      main.file,
      `express@${devDependencies.express}`,
      `@types/node@${devDependencies['@types/node']}`,
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
    ];
    await run('npm', install, { cwd: project, env });
    installMs = performance.now() - start;
  }, 300_000);

  afterAll(async () => {
    await registry?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('has no Rust toolchain to fall back on', async () => {
    for (const tool of RUST_TOOLS) {
      await expect(run('sh', ['-c', `command -v ${tool}`], { env }), tool).rejects.toThrow();
    }
  });

  it("installs this platform's binary package from kvroute's optional dependencies, and no other", () => {
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', 'kvroute', 'package.json'), 'utf8')) as {
      optionalDependencies: Record<string, string>;
    };
    expect(installed.optionalDependencies).toEqual(Object.fromEntries(PREBUILT_PLATFORMS.map((p) => [prebuiltPackageName(p), main.version])));
    for (const p of PREBUILT_PLATFORMS) {
      expect(existsSync(join(project, 'node_modules', prebuiltPackageName(p))), p).toBe(p === host);
    }
    // npm read every platform's manifest and fetched no other platform's tarball (this one's it may
    // have had in its cache already: npm's cache is keyed by the integrity the manifest gives).
    for (const p of PREBUILT_PLATFORMS) expect(registry.requests).toContain(`/${prebuiltPackageName(p)}`);
    const fetched = registry.requests.filter((r) => r.startsWith('/-/tarballs/'));
    expect(fetched.filter((r) => r !== `/-/tarballs/${basename(binding.file)}`)).toEqual([]);
    // The main package ships no binary of its own.
    expect(existsSync(join(project, 'node_modules', 'kvroute', 'native', 'kvroute.node'))).toBe(false);
    console.log(
      `install: ${(installMs / 1000).toFixed(1)} s; tarballs: kvroute ${(main.size / 1024).toFixed(0)} KiB (${main.entryCount} files), ${binding.name} ${(binding.size / 1024).toFixed(0)} KiB`,
    );
  });

  it('routes a completion through an Express app with kvroute/server in front of a kvroute/sim worker', async () => {
    const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: project, env, timeout: 60_000 });
    const seen = JSON.parse(stdout) as {
      status: number;
      headers: Record<string, string>;
      body: { object: string; choices: Array<{ text: string }>; usage: { completion_tokens: number } };
      hello: string;
      addons: string[];
    };
    expect(seen.status).toBe(200);
    expect(seen.headers).toMatchObject({ 'x-request-id': 'user-req-1', 'x-kvroute-mode': 'aggregated', 'x-kvroute-decode-worker': '7' });
    expect(seen.headers['x-kvroute-overlap-blocks']).toMatch(/^\d+$/);
    expect(seen.body.object).toBe('text_completion');
    expect(seen.body.choices[0].text.length).toBeGreaterThan(0);
    expect(seen.body.usage.completion_tokens).toBe(8);
    expect(seen.hello).toBe('the app still serves its own routes');
    const ours = seen.addons.filter((a) => /node_modules\/(@kvroute\/|kvroute\/)/.test(a));
    expect(ours).toEqual([join(project, 'node_modules', prebuiltPackageName(host), `kvroute.${host}.node`)]);
  });

  it('keeps `import "kvroute"` light in the installed package', async () => {
    const { stdout } = await run(process.execPath, ['loaded-modules.mjs', 'kvroute'], { cwd: project, env });
    const { files, importMs } = JSON.parse(stdout) as { files: string[]; importMs: number };
    const packages = new Set(files.map((f) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean));
    expect([...packages].sort()).toEqual([prebuiltPackageName(host), 'kvroute'].sort());
    console.log(`import('kvroute') in the installed package: ${importMs.toFixed(1)} ms, ${files.length} files`);
  });

  it('answers a CommonJS require() with the ES module where Node can load it, else with "use import()"', async () => {
    const script = "const m = require('kvroute'); console.log(typeof m.computeBlockHashes)";
    const result = await run(process.execPath, ['-e', script], { cwd: project, env }).then(
      ({ stdout }) => ({ stdout, stderr: '' }),
      (err: { stdout: string; stderr: string }) => ({ stdout: err.stdout, stderr: err.stderr }),
    );
    const [major, minor] = process.versions.node.split('.').map(Number);
    // require(esm) is on by default from Node 20.19 and 22.12 (not in 21 or 22.0-22.11).
    const requiresEsm = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major >= 23;
    if (requiresEsm) expect(result.stdout.trim()).toBe('function');
    else expect(result.stderr).toMatch(/ERR_REQUIRE_ESM[\s\S]*import\(\)/);
  });

  // A strict tsc over every declaration of the package: 30.4 s on a 2-vCPU machine at load average 17,
  // past vitest's default limit of 30 s.
  it('ships declarations that type-check for every subpath (skipLibCheck off)', async () => {
    const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const options = [
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      'false',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
    ];
    await run(process.execPath, [tsc, ...options, 'types-check.ts'], { cwd: project, env }).catch((err: { stdout?: string }) => {
      throw new Error(`tsc failed:\n${err.stdout}`);
    });
  }, 120_000);

  it('without the binary package, fails with a message naming the platform and how to build from source, and runs on a build from source', async () => {
    const pkgDir = join(project, 'node_modules', prebuiltPackageName(host));
    const localBuild = join(project, 'node_modules', 'kvroute', 'native', 'kvroute.node');
    renameSync(pkgDir, `${pkgDir}.away`);
    try {
      const failure = await run(process.execPath, ['--input-type=module', '-e', "await import('kvroute')"], { cwd: project, env }).then(
        () => undefined,
        (err: { code: number; stderr: string }) => err,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stderr).toContain(`NativeBindingError: kvroute: no native addon could be loaded for ${host}`);
      expect(failure?.stderr).toContain(`${prebuiltPackageName(host)}: not installed`);
      expect(failure?.stderr).toContain('install a Rust toolchain (https://rustup.rs');
      expect(failure?.stderr).toContain('npx kvroute build-native');

      // As the message says, with cargo this time. A debug build sharing the checkout's target
      // folder (cargo test compiled the dependencies there) keeps this to the crate itself.
      const withCargo = { ...env, PATH: process.env.PATH, CARGO_TARGET_DIR: join(REPO_ROOT, 'native', 'target') };
      const build = await run('npx', ['kvroute', 'build-native', '--debug'], { cwd: project, env: withCargo, timeout: 240_000 });
      expect(build.stderr).toContain(`built ${localBuild}; it loads`);
      const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: project, env, timeout: 60_000 });
      const seen = JSON.parse(stdout) as { status: number; addons: string[] };
      expect(seen.status).toBe(200);
      expect(seen.addons.filter((a) => /node_modules\/(@kvroute\/|kvroute\/)/.test(a))).toEqual([localBuild]);
    } finally {
      renameSync(`${pkgDir}.away`, pkgDir);
      rmSync(localBuild, { force: true });
    }
  }, 300_000);
});
