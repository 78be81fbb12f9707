// The import graph of src/ against the rules of .dependency-cruiser.mjs: no circle of files or
// folders, no layer importing one above it or a sibling. `npx depcruise src` prints the same.
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseOptions, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

async function violations(paths: string[], options: ICruiseOptions, tsConfig?: ReturnType<typeof extractTSConfig>): Promise<string[]> {
  const { output } = await cruise(paths, options, undefined, { tsConfig });
  const result = output as ICruiseResult;
  return result.summary.violations.map(
    (v: IViolation) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`,
  );
}

/** The rules and options of .dependency-cruiser.mjs, with paths that do not depend on the working directory. */
async function rules(): Promise<ICruiseOptions> {
  const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.mjs'));
  return { ...options, tsConfig: { fileName: join(root, 'tsconfig.json') } };
}

describe('the import graph of src/', () => {
  it('keeps every rule', async () => {
    const found = await violations(['src'], { ...(await rules()), baseDir: root }, extractTSConfig(join(root, 'tsconfig.json')));
    expect(found).toEqual([]);
  });
});

describe('the folders of src/', () => {
  it('each have a README with their invariants and what they may import', () => {
    const folders = [
      'src',
      ...readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => join(e.parentPath, e.name).slice(root.length)),
    ];
    const missing = folders
      .filter((f) => f !== 'src')
      .filter((f) => {
        const readme = join(root, f, 'README.md');
        if (!existsSync(readme)) return true;
        const text = readFileSync(readme, 'utf8');
        return !text.includes('## Invariants') || !text.includes('## Imports');
      });
    expect(missing).toEqual([]);
  });
});

describe('the rules', () => {
  // A small tree that breaks each rule once: the rules must name every break.
  const dir = mkdtempSync(join(tmpdir(), 'kvroute-layers-'));
  const files: Record<string, string> = {
    'src/util/low.js': "import '../core/high.js';\n", // upward
    'src/core/high.js': 'export {};\n',
    'src/engines/a.js': "import '../events/b.js';\n", // sibling of the same layer
    'src/events/b.js': 'export {};\n',
    'src/routing/x.js': "import './y.js';\n", // circle of files
    'src/routing/y.js': "import './x.js';\n",
    'src/server/fleet/registry.js': "import '../config/config.js';\n", // allowed: config is below fleet
    'src/server/config/config.js': "import '../app/wiring.js';\n", // upward inside the server, and a folder circle
    'src/server/app/wiring.js': "import '../fleet/registry.js';\n",
    'src/sim/replay/r.js': "import '../worker/w.js';\n", // siblings inside sim
    'src/sim/worker/w.js': 'export {};\n',
    'src/cli/top.js': "import '../util/low.js';\n", // allowed: anything below
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('catch upward and sideways imports and circles of files and folders', async () => {
    const options = await rules();
    const found = await violations(['src'], { ...options, baseDir: dir });
    expect(found).toEqual(
      expect.arrayContaining([
        'src-util-imports-only-below: src/util/low.js -> src/core/high.js',
        'src-engines-imports-only-below: src/engines/a.js -> src/events/b.js',
        'server-config-imports-only-below: src/server/config/config.js -> src/server/app/wiring.js',
        'sim-replay-imports-only-below: src/sim/replay/r.js -> src/sim/worker/w.js',
      ]),
    );
    expect(found.some((v) => v.startsWith('no-circular: src/routing/x.js -> src/routing/y.js'))).toBe(true);
    expect(found.some((v) => v.startsWith('no-folder-cycle: src/server/'))).toBe(true);
    // What the layers allow is not reported: cli over anything, fleet over config.
    expect(found.filter((v) => v.startsWith('src-cli-') || v.startsWith('server-fleet-'))).toEqual([]);
  });
});
