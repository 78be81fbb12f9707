// The package's subpath exports (package.json "exports"): each maps to a source entry with its
// types, and each loads what it is for and nothing heavier. Run from the sources through tsx in a
// child process; test/package/install.test.ts checks the built package the same way.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, { types: string; import: string; default: string } | string>;
};
const HELPER = join(import.meta.dirname, 'loaded-modules.mjs');

/** ./dist/server/index.js -> src/server/index.ts */
const sourceOf = (target: string) => target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');

interface Loaded {
  importMs: number;
  files: string[];
}

async function loadedBy(url: string): Promise<Loaded> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', HELPER, url], { cwd: ROOT });
  return JSON.parse(stdout) as Loaded;
}

/** npm packages and src/ folders among the files (the addon counts as 'native'). */
function summarize(files: string[]): { packages: string[]; sources: string[] } {
  const packages = new Set<string>();
  const sources = new Set<string>();
  for (const f of files) {
    const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f);
    if (inPackage) packages.add(inPackage[1]);
    else sources.add(relative(ROOT, f));
  }
  return { packages: [...packages].sort(), sources: [...sources].sort() };
}

const HEAVY = [
  'uWebSockets.js',
  'zeromq',
  'piscina',
  'undici',
  'prom-client',
  'msgpackr',
  '@huggingface/jinja',
  '@huggingface/tokenizers',
  '@kubernetes/client-node',
];

// What each subpath is for (a package it must load, so the check cannot pass by seeing nothing)
// and the stacks of the others it must leave alone.
const EXPECTED: Record<string, { loads: string[]; never: string[] }> = {
  '.': { loads: [], never: HEAVY },
  './hash-pool': { loads: ['piscina'], never: HEAVY.filter((p) => p !== 'piscina') },
  './routing': { loads: ['undici'], never: ['uWebSockets.js', 'zeromq', 'piscina', 'prom-client', 'msgpackr'] },
  './events': { loads: ['zeromq', 'msgpackr'], never: ['uWebSockets.js', 'undici', 'piscina', 'prom-client'] },
  // The Kubernetes client loads only when discovery is configured.
  './server': { loads: ['uWebSockets.js', 'prom-client'], never: ['piscina', '@kubernetes/client-node'] },
  './sim': { loads: ['zeromq'], never: ['piscina'] },
};

const subpaths = Object.keys(pkg.exports).filter((k) => k !== './package.json');

describe('package.json exports', () => {
  it('lists exactly the documented subpaths, each an ES module with its types', () => {
    expect(subpaths.sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const key of subpaths) {
      const entry = pkg.exports[key] as { types: string; import: string; default: string };
      expect(Object.keys(entry)).toEqual(['types', 'import', 'default']);
      // `default` is the same ES module: require() of it works where Node can require ES modules
      // (22.12+) and says "use import()" where it cannot, instead of "no exports main defined".
      expect(entry.default).toBe(entry.import);
      expect(entry.types).toBe(entry.import.replace(/\.js$/, '.d.ts'));
      expect(existsSync(join(ROOT, sourceOf(entry.import))), `${key} -> ${sourceOf(entry.import)}`).toBe(true);
    }
  });
});

describe('what each subpath loads', () => {
  let baseline: Set<string>;
  beforeAll(async () => {
    // tsx's own modules: loaded whatever the entry.
    baseline = new Set((await loadedBy('data:text/javascript,')).files);
  });
  const entryUrl = (key: string) => pathToFileURL(join(ROOT, sourceOf((pkg.exports[key] as { import: string }).import))).href;

  it('kvroute (the root) loads the routing core, its utilities and the addon, and no npm package at all', async () => {
    const { files } = await loadedBy(entryUrl('.'));
    const { packages, sources } = summarize(files.filter((f) => !baseline.has(f)));
    expect(packages).toEqual([]);
    expect(sources).toContain('native/kvroute.node');
    expect(sources).toContain('src/core/routing-core.ts');
    for (const s of sources) expect(s, s).toMatch(/^(src\/index\.ts|src\/core\/|src\/util\/|native\/kvroute\.node$)/);
  });

  for (const [key, expected] of Object.entries(EXPECTED)) {
    it(`${key === '.' ? 'kvroute' : `kvroute${key.slice(1)}`} loads ${expected.loads.join(', ') || 'no package'} and none of ${expected.never.join(', ')}`, async () => {
      const { files } = await loadedBy(entryUrl(key));
      const { packages, sources } = summarize(files.filter((f) => !baseline.has(f)));
      for (const p of expected.loads) expect(packages).toContain(p);
      for (const p of expected.never) expect(packages).not.toContain(p);
      if (key !== './sim' && key !== './server') expect(sources.filter((s) => s.startsWith('src/sim/'))).toEqual([]);
    });
  }
});
