// Static checks of a cross-built addon with binutils' readelf (and file(1) for the report): the
// right machine, a shared object, only the expected shared libraries, and no glibc symbol newer
// than the target's floor. Loading it needs a Node.js of that platform: see scripts/README.md.
import { execFileSync } from 'node:child_process';
import type { PrebuiltTarget } from './prebuilt-targets.js';

export interface BinaryReport {
  file: string;
  machine: string;
  needed: string[];
  /** Highest GLIBC_x.y version the binary requires, if any. */
  glibc: string | undefined;
  problems: string[];
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });

/** Compares dotted versions: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Reads what `readelf -h -d -V` prints into the facts the checks need. */
export function parseReadelf(text: string): { machine: string; type: string; needed: string[]; glibc: string | undefined } {
  const machine = /^\s*Machine:\s*(.+)$/m.exec(text)?.[1].trim() ?? '';
  const type = /^\s*Type:\s*(\S+)/m.exec(text)?.[1] ?? '';
  const needed = [...text.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  const versions = [...text.matchAll(/\bGLIBC_(\d+(?:\.\d+)+)\b/g)].map((m) => m[1]);
  const glibc = versions.sort(compareVersions).at(-1);
  return { machine, type, needed, glibc };
}

export function verifyBinary(path: string, target: PrebuiltTarget): BinaryReport {
  const facts = parseReadelf(run('readelf', ['-h', '-d', '-V', '--wide', path]));
  const problems: string[] = [];
  if (facts.type !== 'DYN') problems.push(`not a shared object (ELF type ${facts.type})`);
  if (facts.machine !== target.elfMachine) problems.push(`machine is ${facts.machine}, expected ${target.elfMachine}`);
  const unexpected = facts.needed.filter((lib) => !target.allowedNeeded.includes(lib));
  if (unexpected.length > 0) problems.push(`unexpected shared libraries: ${unexpected.join(', ')}`);
  if (target.maxGlibc === undefined && facts.glibc !== undefined) problems.push(`requires GLIBC_${facts.glibc} on a non-glibc target`);
  if (target.maxGlibc !== undefined && facts.glibc !== undefined && compareVersions(facts.glibc, target.maxGlibc) > 0) {
    problems.push(`requires GLIBC_${facts.glibc}, newer than ${target.maxGlibc}`);
  }
  return { file: run('file', ['-b', path]).trim(), machine: facts.machine, needed: facts.needed, glibc: facts.glibc, problems };
}
