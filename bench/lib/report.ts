// Writes a run's report: <stamp>.json (figures and raw data), <stamp>.md (tables and charts) and
// the charts as <stamp>/<suite>-<chart>.svg; a complete full run is also copied to latest.*.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { formatNumber, formatValue } from './format.js';
import { advantage, targetVerdict, type Chart, type Figure, type Section, type TargetVerdict } from './suite.js';

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  commit: string;
  /** Uncommitted changes in the working tree when the run started. */
  dirty: boolean;
  /** 1, 5 and 15-minute load averages when the run started (other processes add noise). */
  loadAverage: number[];
  /** Linux CPU pressure (PSI "some" avg60, %) when the run started, if available. */
  cpuPressure?: number;
}

function cpuPressure(): number | undefined {
  try {
    const m = /some avg10=[\d.]+ avg60=([\d.]+)/.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export interface SuiteRecord {
  name: string;
  title: string;
  ok: boolean;
  error?: string;
  durationS: number;
  /** Of durationS, the time the suite's prepare() took (installing or building a peer). */
  prepareS?: number;
  figures: Figure[];
  sections: Section[];
  charts: Chart[];
  data?: unknown;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  /** A run of the peer suites (--peers): kvroute next to Dynamo and SMG. */
  peers?: boolean;
  /** Suites selected with --only (absent: all). */
  only?: string[];
  machine: MachineInfo;
  suites: SuiteRecord[];
}

export function machineInfo(cwd: string): MachineInfo {
  const git = (args: string[]): string => {
    try {
      return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${process.arch}`,
    node: process.version,
    commit: git(['rev-parse', '--short', 'HEAD']) || 'unknown',
    dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
    cpuPressure: cpuPressure(),
  };
}

/** File-system-safe UTC timestamp: 2025-01-31T12-34-56Z. */
export function stampOf(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
}

function chartFile(suite: string, chart: Chart): string {
  return `${suite}-${chart.name}.svg`;
}

/** The JSON document: charts by file name (relative to the report), not inline. */
export function reportJson(report: BenchReport, chartDir: string): unknown {
  return {
    format: 'kvroute-bench/1',
    ...report,
    suites: report.suites.map((s) => ({
      ...s,
      charts: s.charts.map((c) => ({ name: c.name, title: c.title, file: `${chartDir}/${chartFile(s.name, c)}` })),
    })),
  };
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

const VERDICT_MARKS: Record<TargetVerdict, string> = { met: '✓', missed: '✗ missed', 'below noise': 'not measurable: below noise' };

function targetCell(f: Figure): string {
  const verdict = targetVerdict(f);
  if (!f.target || !verdict) return '';
  return `${f.target.op === '<=' ? '≤' : '≥'} ${formatValue(f.target.value, f.unit)} ${VERDICT_MARKS[verdict]}`;
}

function valueCell(f: Figure): string {
  const value = `**${formatValue(f.value, f.unit)}**`;
  return f.belowNoise ? `${value} (below noise)` : value;
}

function referenceCells(f: Figure): [string, string] {
  if (!f.reference) return ['', ''];
  const adv = advantage(f);
  const vs = adv === undefined ? `${formatNumber(f.ratio ?? Number.NaN)}×` : adv >= 1 ? `${formatNumber(adv)}× better` : `${formatNumber(1 / adv)}× worse`;
  return [`${formatValue(f.reference.value, f.unit)} (${cell(f.reference.name)})`, vs];
}

function figureTable(rows: Array<{ suite?: string; f: Figure }>): string {
  const withSuite = rows.some((r) => r.suite !== undefined);
  const head = withSuite ? ['Suite', 'Figure', 'Value', 'Reference', 'vs reference', 'Target'] : ['Figure', 'Value', 'Reference', 'vs reference', 'Target'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const { suite, f } of rows) {
    const [ref, vs] = referenceCells(f);
    const name = f.note ? `${cell(f.name)} <br><sub>${cell(f.note)}</sub>` : cell(f.name);
    const cols = [name, valueCell(f), ref, vs, targetCell(f)];
    lines.push(`| ${(withSuite ? [cell(suite ?? ''), ...cols] : cols).join(' | ')} |`);
  }
  return lines.join('\n');
}

export function renderMarkdown(report: BenchReport, chartDir: string): string {
  const m = report.machine;
  const out: string[] = [];
  out.push('# kvroute benchmarks', '');
  out.push(
    `Run of ${report.startedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}, ${report.quick ? '**quick run** (reduced sizes)' : 'full run'}` +
      `${report.only ? ` of ${report.only.join(', ')}` : ''}; ${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}; ` +
      `commit ${m.commit}${m.dirty ? ' (with uncommitted changes)' : ''}. ` +
      `Load average at the start ${m.loadAverage.join(' / ')}${m.cpuPressure === undefined ? '' : `, CPU pressure ${m.cpuPressure}% (PSI some, 60 s)`}: the machine is shared, so figures vary from run to run.`,
    '',
  );
  const flags = [report.peers ? '--peers' : '', report.quick ? '--quick' : ''].filter(Boolean).join(' ');
  const verdicts =
    'targets are reported, never asserted (✓ met, ✗ missed; a latency or overhead measured negative is noise-dominated: "below noise", neither).';
  out.push(
    `Reproduce with \`npm run bench${flags ? ` -- ${flags}` : ''}\`. ` +
      (report.peers
        ? `kvroute and its peers are measured in one run, in alternating rounds; figures are medians of rounds, each kvroute figure with the peer it is compared to as its reference; ${verdicts}`
        : `Every native figure is measured next to a plain TypeScript reference in the same run; ${verdicts}`),
    '',
  );
  const failed = report.suites.filter((s) => !s.ok);
  if (failed.length > 0) out.push(`**Failed suites:** ${failed.map((s) => `${s.name} (${cell(s.error ?? 'error')})`).join('; ')}`, '');
  const headline = report.suites.flatMap((s) => s.figures.filter((f) => f.headline).map((f) => ({ suite: s.name, f })));
  if (headline.length > 0) out.push('## Headline figures', '', figureTable(headline), '');
  for (const s of report.suites) {
    const prepared = s.prepareS === undefined ? '' : ` (${formatNumber(s.prepareS)} s of it installing or building what it needs)`;
    out.push(`## ${s.title}`, '', `Suite \`${s.name}\`, ${formatNumber(s.durationS)} s${prepared}.`, '');
    if (!s.ok) out.push(`**Failed:** ${cell(s.error ?? 'error')}`, '');
    if (s.figures.length > 0) out.push(figureTable(s.figures.map((f) => ({ f }))), '');
    for (const sec of s.sections) out.push(`### ${sec.title}`, '', sec.markdown.trim(), '');
    for (const c of s.charts) out.push(`![${c.title}](${chartDir}/${chartFile(s.name, c)})`, '');
  }
  return out.join('\n');
}

export interface WrittenReport {
  json: string;
  markdown: string;
  charts: string;
  latest?: string;
}

/** Writes <stamp>.json, <stamp>.md and <stamp>/*.svg in `dir`, plus <latestName>.* when asked. */
export function writeReport(report: BenchReport, dir: string, stamp: string, alsoLatest: boolean, latestName = 'latest'): WrittenReport {
  mkdirSync(dir, { recursive: true });
  const write = (name: string): { json: string; markdown: string; charts: string } => {
    const chartDir = join(dir, name);
    rmSync(chartDir, { recursive: true, force: true });
    mkdirSync(chartDir, { recursive: true });
    for (const s of report.suites) for (const c of s.charts) writeFileSync(join(chartDir, chartFile(s.name, c)), c.svg);
    const json = join(dir, `${name}.json`);
    const markdown = join(dir, `${name}.md`);
    writeFileSync(json, `${JSON.stringify(reportJson(report, name), null, 2)}\n`);
    writeFileSync(markdown, renderMarkdown(report, name));
    return { json, markdown, charts: chartDir };
  };
  const main = write(stamp);
  if (!alsoLatest) return main;
  return { ...main, latest: write(latestName).markdown };
}
