// The harness end to end, on fixture suites: reports written, exit status non-zero only when a
// suite failed to run (never for a missed target).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = join(ROOT, 'test/bench/fixtures');
const dirs: string[] = [];

function outDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'kvroute-bench-'));
  dirs.push(d);
  return d;
}

function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('npm run bench', () => {
  it('runs the suites, writes JSON, Markdown and SVG, and exits 0 despite a missed target', async () => {
    const out = outDir();
    const r = await bench(['--suites', join(FIXTURES, 'suites-ok'), '--out', out]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\[fine [\d.]+s\] running full/);
    expect(r.stdout).toMatch(/missed thing: 3 GB\/s {2}\| target >= 5 MISSED/);
    const files = readdirSync(out);
    const stamp = files.find((f) => /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.json$/.test(f))?.replace(/\.json$/, '');
    expect(stamp).toBeDefined();
    const json = JSON.parse(readFileSync(join(out, `${stamp}.json`), 'utf8'));
    expect(json.format).toBe('kvroute-bench/1');
    expect(json.quick).toBe(false);
    expect(json.machine.cpus).toBeGreaterThan(0);
    const [suite] = json.suites;
    expect(suite).toMatchObject({ name: 'fine', ok: true, data: { quick: false } });
    expect(suite.data.execArgv).toContain('--max-semi-space-size=8'); // the suite's nodeFlags
    expect(suite.figures[0]).toMatchObject({ ratio: 0.25, better: 'lower', met: true });
    expect(suite.figures[1]).toMatchObject({ met: false, better: 'higher' });
    expect(suite.charts[0].file).toBe(`${stamp}/fine-bars.svg`);
    expect(readFileSync(join(out, stamp as string, 'fine-bars.svg'), 'utf8')).toMatch(/^<svg /);
    const md = readFileSync(join(out, `${stamp}.md`), 'utf8');
    expect(md).toContain('## Headline figures');
    expect(md).toContain('| fine | fast thing | **2 us** | 8 us (slow thing) | 4× better | ≤ 10 us ✓ |');
    expect(md).toContain('≥ 5 GB/s ✗ missed');
    expect(md).toContain(`![Bars](${stamp}/fine-bars.svg)`);
    // A complete full run refreshes latest.*, with charts linked from latest/.
    expect(readFileSync(join(out, 'latest.md'), 'utf8')).toContain('![Bars](latest/fine-bars.svg)');
    expect(existsSync(join(out, 'latest', 'fine-bars.svg'))).toBe(true);
  }, 90_000);

  it('a quick or partial run leaves latest.* alone', async () => {
    const out = outDir();
    const r = await bench(['--suites', join(FIXTURES, 'suites-ok'), '--out', out, '--quick', '--only', 'fine']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('running quick');
    expect(existsSync(join(out, 'latest.md'))).toBe(false);
  }, 90_000);

  it('leaves a fullOnly suite out of --quick unless --only names it', async () => {
    const quick = await bench(['--suites', join(FIXTURES, 'suites-full-only'), '--out', outDir(), '--quick']);
    expect(quick.code, quick.stdout + quick.stderr).toBe(0);
    expect(quick.stdout).toContain('1 suite(s), quick: always');
    const named = await bench(['--suites', join(FIXTURES, 'suites-full-only'), '--out', outDir(), '--quick', '--only', 'long']);
    expect(named.code, named.stdout + named.stderr).toBe(0);
    expect(named.stdout).toContain('long suite running quick');
    const full = await bench(['--suites', join(FIXTURES, 'suites-full-only'), '--out', outDir()]);
    expect(full.stdout).toContain('2 suite(s): always, long');
  }, 90_000);

  it('records failing, hanging and unloadable suites, runs the others, and exits 1', async () => {
    const out = outDir();
    const r = await bench(['--suites', join(FIXTURES, 'suites-mixed'), '--out', out, '--timeout', '3']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/failed suites: .*broken/);
    const stamp = readdirSync(out)
      .find((f) => f.endsWith('.json'))
      ?.replace(/\.json$/, '');
    const json = JSON.parse(readFileSync(join(out, `${stamp}.json`), 'utf8'));
    const byName = Object.fromEntries(json.suites.map((s: { name: string }) => [s.name, s]));
    expect(byName.fine.ok).toBe(true);
    expect(byName.broken).toMatchObject({ ok: false, error: expect.stringContaining('broken on purpose') });
    expect(byName.hangs).toMatchObject({ ok: false, error: 'timed out after 3 s' });
    expect(byName['no-export']).toMatchObject({ ok: false, error: expect.stringContaining('must export `suite: BenchSuite`') });
    expect(existsSync(join(out, 'latest.md'))).toBe(false);
  }, 90_000);

  it('starts a suite time limit once its prepare() is done, and hands run() what it returned', async () => {
    const out = outDir();
    const r = await bench(['--suites', join(FIXTURES, 'suites-prepare'), '--out', out, '--timeout', '2']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\[prepares [\d.]+s\] installing/);
    expect(r.stdout).toContain('measuring with /opt/peer');
    const stamp = readdirSync(out)
      .find((f) => f.endsWith('.json'))
      ?.replace(/\.json$/, '');
    const json = JSON.parse(readFileSync(join(out, `${stamp}.json`), 'utf8'));
    expect(json.suites[0].prepareS).toBeGreaterThanOrEqual(2.5);
    expect(readFileSync(join(out, `${stamp}.md`), 'utf8')).toMatch(/s of it installing or building what it needs\)/);
  }, 90_000);

  it('--peers names its reports apart and refreshes peers-latest.*, never latest.*', async () => {
    const out = outDir();
    const r = await bench(['--peers', '--suites', join(FIXTURES, 'suites-ok'), '--out', out]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('1 peer suite(s)');
    const files = readdirSync(out);
    expect(files.some((f) => /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-peers\.md$/.test(f))).toBe(true);
    expect(files).not.toContain('latest.md');
    const md = readFileSync(join(out, 'peers-latest.md'), 'utf8');
    expect(md).toContain('Reproduce with `npm run bench -- --peers`. kvroute and its peers are measured in one run');
    expect(md).toContain('![Bars](peers-latest/fine-bars.svg)');
    expect(JSON.parse(readFileSync(join(out, 'peers-latest.json'), 'utf8')).peers).toBe(true);
  }, 90_000);

  it('lists the peer suites with --peers --list', async () => {
    const list = await bench(['--peers', '--list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/dynamo-indexer +Peer: Dynamo's KV indexer/);
  }, 90_000);

  it('refuses unknown arguments and unknown suites with exit status 2', async () => {
    const unknownArg = await bench(['--fast']);
    expect(unknownArg.code).toBe(2);
    expect(unknownArg.stderr).toContain('unknown argument --fast');
    const unknownSuite = await bench(['--suites', join(FIXTURES, 'suites-ok'), '--only', 'nope', '--out', outDir()]);
    expect(unknownSuite.code).toBe(2);
    expect(unknownSuite.stderr).toContain('unknown suite(s): nope; available: fine');
    const list = await bench(['--suites', join(FIXTURES, 'suites-mixed'), '--list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/fine +A fine suite/);
    expect(list.stdout).toMatch(/no-export +\(does not load/);
  }, 90_000);
});
