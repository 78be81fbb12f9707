// The real-engine suite's report: what each check measured (the router's claims next to the
// engines' own counters), written to bench/results/<stamp>-engines.{json,md} and engines-latest.*,
// and printed at the end of the run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineInfo, stampOf } from '../../bench/lib/report.js';

const RESULTS = fileURLToPath(new URL('../../bench/results/', import.meta.url));

export interface CheckRecord {
  check: string;
  /** What it measured, as name -> value. */
  facts: Record<string, unknown>;
}

const started = new Date();
const records: CheckRecord[] = [];
const setup: Record<string, unknown> = {};

/** Records a check's measured facts (before its assertions, so a failed check is reported too). */
export function record(check: string, facts: Record<string, unknown>): void {
  records.push({ check, facts });
}

export function recordSetup(facts: Record<string, unknown>): void {
  Object.assign(setup, facts);
}

function cell(v: unknown): string {
  return (typeof v === 'string' ? v : JSON.stringify(v)).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function writeEnginesReport(outcomes: Record<string, 'passed' | 'failed' | 'skipped'>): string {
  const finished = new Date();
  const doc = {
    suite: 'engines',
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    seconds: Math.round((finished.getTime() - started.getTime()) / 1000),
    machine: machineInfo(process.cwd()),
    setup,
    outcomes,
    checks: records,
  };
  const md = [
    `# Real-engine suite (npm run test:engines), ${started.toISOString().slice(0, 16)}Z`,
    '',
    `${doc.seconds} s. Setup: ${Object.entries(setup)
      .map(([k, v]) => `${k} ${cell(v)}`)
      .join('; ')}.`,
    '',
    '| check | outcome |',
    '| --- | --- |',
    ...Object.entries(outcomes).map(([k, v]) => `| ${cell(k)} | ${v} |`),
    '',
    '## Measured',
    '',
    '| check | facts |',
    '| --- | --- |',
    ...records.map(
      (r) =>
        `| ${cell(r.check)} | ${Object.entries(r.facts)
          .map(([k, v]) => `${k}: ${cell(v)}`)
          .join('; ')} |`,
    ),
    '',
  ].join('\n');
  mkdirSync(RESULTS, { recursive: true });
  const stamp = stampOf(started);
  for (const [name, text] of [
    [`${stamp}-engines.json`, JSON.stringify(doc, null, 2)],
    [`${stamp}-engines.md`, md],
    ['engines-latest.json', JSON.stringify(doc, null, 2)],
    ['engines-latest.md', md],
  ]) {
    writeFileSync(join(RESULTS, name), `${text}\n`);
  }
  return md;
}
