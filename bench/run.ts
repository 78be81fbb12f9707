// `npm run bench [-- --quick] [-- --only a,b]`: runs every suite of bench/suites/*.ts, each in its
// own process, shows progress, and writes bench/results/<timestamp>.{json,md} with the charts
// in bench/results/<timestamp>/ (a complete full run also refreshes bench/results/latest.*).
// `--peers` runs the peer suites of bench/peers/suites/ instead (kvroute next to Dynamo and SMG,
// installed on demand into bench/.cache/peers/): <timestamp>-peers.* and peers-latest.*.
// The exit status is non-zero only when the harness or a suite failed to run; targets are
// reported, never asserted.
import { fork } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildMessage } from './lib/child.js';
import { formatNumber, formatValue } from './lib/format.js';
import { machineInfo, stampOf, writeReport, type BenchReport, type SuiteRecord } from './lib/report.js';
import { advantage, completeFigure, expectSuite, expectSuiteResult, targetVerdict, type BenchSuite } from './lib/suite.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH_DIR);
const CHILD = join(BENCH_DIR, 'lib', 'child.ts');
const QUICK_BUDGET_S = 120;
/** A suite's prepare() (installing a peer: a cargo build, a pip install) has this long. */
const PREPARE_TIMEOUT_S = 1800;

const USAGE = `usage: npm run bench [-- options]
  --quick          reduced sizes (the whole run stays under ${QUICK_BUDGET_S} s; CI runs this)
  --peers          run the peer suites (bench/peers/suites: kvroute next to Dynamo and SMG, which
                   are installed on demand into bench/.cache/peers; never run by npm install or CI)
  --only a,b       run only these suites (repeatable)
  --list           list the suites and exit
  --out DIR        where reports go (default bench/results)
  --suites DIR     where the suites are (default bench/suites, bench/peers/suites with --peers)
  --timeout S      per-suite time limit in seconds (default 100 with --quick, 1800 without)
  --help`;

interface Args {
  suites?: string;
  quick: boolean;
  peers: boolean;
  only?: string[];
  list: boolean;
  out: string;
  timeoutS?: number;
}

class UsageError extends Error {}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, peers: false, list: false, out: join(BENCH_DIR, 'results') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') args.quick = true;
    else if (a === '--peers') args.peers = true;
    else if (a === '--list') args.list = true;
    else if (a === '--only') args.only = [...(args.only ?? []), ...value().split(',').filter(Boolean)];
    else if (a === '--out') args.out = resolve(value());
    else if (a === '--suites') args.suites = resolve(value());
    else if (a === '--timeout') {
      const s = Number(value());
      if (!(s > 0)) throw new UsageError('--timeout needs a positive number of seconds');
      args.timeoutS = s;
    } else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new UsageError(`unknown argument ${a}`);
  }
  return args;
}

interface SuiteEntry {
  file: string;
  suite?: BenchSuite;
  loadError?: string;
}

/** Every <dir>/*.ts, imported for its name, title and order. */
async function discover(dir: string): Promise<SuiteEntry[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .sort()
    .map((f) => join(dir, f));
  const entries: SuiteEntry[] = [];
  for (const file of files) {
    try {
      const mod = (await import(pathToFileURL(file).href)) as { suite?: unknown };
      entries.push({ file, suite: expectSuite(mod.suite, relative(ROOT, file)) });
    } catch (err) {
      entries.push({ file, loadError: err instanceof Error ? err.message : String(err) });
    }
  }
  const seen = new Set<string>();
  for (const e of entries) {
    if (!e.suite) continue;
    if (seen.has(e.suite.name)) {
      e.loadError = `another suite is already named '${e.suite.name}'`;
      e.suite = undefined;
    } else seen.add(e.suite.name);
  }
  const order = (e: SuiteEntry) => e.suite?.order ?? 100;
  return entries.sort((a, b) => order(a) - order(b));
}

function entryName(e: SuiteEntry): string {
  return e.suite?.name ?? basename(e.file, '.ts');
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Runs one suite in a child process; never throws (a failure becomes the record's error). */
function runSuite(entry: SuiteEntry, quick: boolean, timeoutS: number): Promise<SuiteRecord> {
  const suite = entry.suite as BenchSuite;
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  let prepareS: number | undefined;
  const record = (extra: Partial<SuiteRecord>): SuiteRecord => ({
    name: suite.name,
    title: suite.title,
    ok: false,
    durationS: Math.round(elapsed() * 10) / 10,
    ...(suite.prepare && prepareS !== undefined ? { prepareS: Math.round(prepareS * 10) / 10 } : {}),
    figures: [],
    sections: [],
    charts: [],
    ...extra,
  });
  return new Promise((resolve) => {
    const child = fork(CHILD, [entry.file, quick ? 'quick' : 'full'], {
      cwd: ROOT,
      execArgv: ['--import', import.meta.resolve('tsx'), '--expose-gc', ...(suite.nodeFlags ?? [])],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Structured clone, not JSON: NaN and Infinity figures survive the trip.
      serialization: 'advanced',
    });
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: SuiteRecord) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    // The suite's time limit starts once it is prepared; preparing (installing a peer) has its own.
    const limit = (seconds: number, while_: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        finish(record({ error: `timed out after ${seconds} s${while_}` }));
      }, seconds * 1000);
    };
    limit(suite.prepare ? PREPARE_TIMEOUT_S : timeoutS, suite.prepare ? ' while preparing' : '');
    child.on('message', (m: ChildMessage) => {
      if (m.type === 'progress') log(`  [${suite.name} ${elapsed().toFixed(1)}s] ${m.message}`);
      else if (m.type === 'prepared') {
        prepareS = elapsed();
        limit(timeoutS, '');
      } else if (m.type === 'error') finish(record({ error: m.error }));
      else if (m.type === 'result') {
        try {
          const r = expectSuiteResult(m.result, suite.name);
          finish(record({ ok: true, figures: r.figures.map(completeFigure), sections: r.sections ?? [], charts: r.charts ?? [], data: r.data }));
        } catch (err) {
          finish(record({ error: (err as Error).message }));
        }
      }
    });
    child.on('error', (err) => finish(record({ error: `could not start: ${err.message}` })));
    child.on('exit', (code, signal) => finish(record({ error: `exited (${signal ?? `code ${code}`}) without a result` })));
  });
}

function printSummary(report: BenchReport): void {
  for (const s of report.suites) {
    log(`\n${s.title} (${s.name}, ${formatNumber(s.durationS)} s)${s.ok ? '' : ' FAILED'}`);
    if (!s.ok) log(`  ${(s.error ?? '').split('\n').slice(0, 6).join('\n  ')}`);
    for (const f of s.figures) {
      const adv = advantage(f);
      const ref = f.reference
        ? `  | ref ${formatValue(f.reference.value, f.unit)}${adv === undefined ? '' : `, ${formatNumber(adv >= 1 ? adv : 1 / adv)}x ${adv >= 1 ? 'better' : 'worse'}`}`
        : '';
      const verdict = targetVerdict(f);
      const target = f.target ? `  | target ${f.target.op} ${formatNumber(f.target.value)} ${verdict === 'missed' ? 'MISSED' : verdict}` : '';
      log(`  ${f.name}: ${formatValue(f.value, f.unit)}${f.belowNoise ? ' (below noise)' : ''}${ref}${target}`);
    }
  }
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n${USAGE}`);
    return 2;
  }
  const entries = await discover(args.suites ?? join(BENCH_DIR, args.peers ? 'peers/suites' : 'suites'));
  if (args.list) {
    for (const e of entries) log(`${entryName(e).padEnd(14)} ${e.suite?.title ?? `(does not load: ${e.loadError})`}`);
    return 0;
  }
  let selected = entries;
  if (args.only) {
    const unknown = args.only.filter((n) => !entries.some((e) => entryName(e) === n));
    if (unknown.length > 0) {
      console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${entries.map(entryName).join(', ')}`);
      return 2;
    }
    selected = entries.filter((e) => args.only?.includes(entryName(e)));
  } else if (args.quick) selected = entries.filter((e) => !e.suite?.fullOnly);
  const timeoutS = args.timeoutS ?? (args.quick ? 100 : 1800);
  const startedAt = new Date();
  log(`kvroute bench: ${selected.length} ${args.peers ? 'peer ' : ''}suite(s)${args.quick ? ', quick' : ''}: ${selected.map(entryName).join(', ')}`);
  const records: SuiteRecord[] = [];
  for (const e of selected) {
    if (!e.suite) {
      const name = entryName(e);
      log(`- ${name}: does not load`);
      records.push({ name, title: name, ok: false, error: `does not load: ${e.loadError}`, durationS: 0, figures: [], sections: [], charts: [] });
      continue;
    }
    log(`- ${e.suite.name}: ${e.suite.title}`);
    const r = await runSuite(e, args.quick, timeoutS);
    log(`  ${r.ok ? 'done' : 'FAILED'} in ${r.durationS} s`);
    records.push(r);
  }
  const finishedAt = new Date();
  const report: BenchReport = {
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    quick: args.quick,
    ...(args.peers ? { peers: true } : {}),
    ...(args.only ? { only: args.only } : {}),
    machine: machineInfo(ROOT),
    suites: records,
  };
  const allOk = records.every((r) => r.ok);
  // latest.* is the committed report: only a complete full run replaces it.
  const latest = !args.quick && !args.only && allOk;
  const written = args.peers
    ? writeReport(report, args.out, `${stampOf(startedAt)}-peers`, latest, 'peers-latest')
    : writeReport(report, args.out, stampOf(startedAt), latest);
  printSummary(report);
  const totalS = (finishedAt.getTime() - startedAt.getTime()) / 1000;
  log(`\nreport: ${relative(ROOT, written.markdown)} (json: ${relative(ROOT, written.json)}, charts: ${relative(ROOT, written.charts)}/)`);
  if (written.latest) log(`latest: ${relative(ROOT, written.latest)}`);
  log(`total ${totalS.toFixed(1)} s`);
  // The budget is CI's quick run of the suites; a peers run installs and starts other routers.
  if (args.quick && !args.peers && totalS > QUICK_BUDGET_S) log(`note: the quick run took longer than its ${QUICK_BUDGET_S} s budget`);
  const failed = records.filter((r) => !r.ok).map((r) => r.name);
  if (failed.length > 0) log(`failed suites: ${failed.join(', ')}`);
  return allOk ? 0 : 1;
}

main().then(
  (code) => {
    process.exit(code);
  },
  (err: unknown) => {
    console.error('bench harness failed:', err);
    process.exit(1);
  },
);
