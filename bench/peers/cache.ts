// Where the peers live (bench/.cache/peers/, ignored by git; never a dependency of the package)
// and how they get there: one install step at a time, its output shown as progress, and an
// error that says what failed and why, a registry out of reach above all.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PEERS_CACHE = fileURLToPath(new URL('../.cache/peers/', import.meta.url));

/** A path under bench/.cache/peers/, its folder created. */
export function cachePath(...parts: string[]): string {
  mkdirSync(PEERS_CACHE, { recursive: true });
  return join(PEERS_CACHE, ...parts);
}

export interface StepOptions {
  /** What the step does, for messages: "building dynamo-kv-router 1.6.1". */
  what: string;
  /** The registry the step downloads from, named when it looks unreachable. */
  registry?: string;
  /** How to get the command when it is missing. */
  missingHint?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

const NETWORK_TROUBLE =
  /could not resolve host|temporary failure in name resolution|name or service not known|failed to establish a new connection|connection (refused|reset|timed out)|network is unreachable|failed to download|spurious network error|failed to get .* as a dependency|failed to load source for dependency|no matching distribution|could not find a version that satisfies|ssl error|certificate verify failed|read timed out|operation timed out/i;

/** Says whether a failed step's output looks like a registry out of reach (tested on real messages). */
export function looksLikeNetworkTrouble(output: string): boolean {
  return NETWORK_TROUBLE.test(output);
}

/** Runs `command args`, showing its output lines; rejects with a clear Error when it fails. */
export function runStep(command: string, args: readonly string[], o: StepOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const onLine = (line: string) => {
      const l = line.trimEnd();
      if (!l) return;
      tail.push(l);
      if (tail.length > 40) tail.shift();
      o.log?.(`  ${l}`);
    };
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (partial + chunk).split(/\r?\n|\r/);
        partial = lines.pop() ?? '';
        lines.forEach(onLine);
      });
      stream.on('end', () => onLine(partial));
    }
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(
        new Error(err.code === 'ENOENT' ? `${o.what}: \`${command}\` was not found${o.missingHint ? ` (${o.missingHint})` : ''}` : `${o.what}: ${err.message}`),
      );
    });
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      const output = tail.join('\n');
      const unreachable =
        o.registry && looksLikeNetworkTrouble(output)
          ? `\n${o.registry} looks unreachable from this machine: the peers are installed from it once, into ${PEERS_CACHE}`
          : '';
      reject(new Error(`${o.what} failed (${signal ?? `exit ${code}`}): \`${command} ${args.join(' ')}\`${unreachable}\n${output}`));
    });
  });
}

/** A marker file recording what an install step produced, so it runs once per version. */
export function installedMarker(dir: string, version: string): { done(): boolean; record(): void } {
  const file = join(dir, '.installed');
  return {
    done: () => existsSync(file) && readFileSync(file, 'utf8').trim() === version,
    record: () => writeFileSync(file, `${version}\n`),
  };
}

export interface VenvInstall {
  /** Folder under bench/.cache/peers/ for the venv. */
  folder: string;
  /** Exact pins, as pip takes them. */
  packages: readonly string[];
  /** pip --no-deps (the wheels' own dependency list cannot be installed here). */
  noDeps?: boolean;
  /** What it is for, in messages: "SMG 1.13.0". */
  what: string;
  /** What is expected to fail without Python, for the message. */
  pythonHint: string;
  /** A Python statement that must run once installed (an import). */
  check?: string;
  log: (line: string) => void;
}

/**
 * A Python venv holding exactly `packages`, created with pip from PyPI the first time (a marker
 * records the pins, so a change of version reinstalls). Returns the venv's folder.
 */
export async function installVenv(o: VenvInstall): Promise<string> {
  const venv = cachePath(o.folder);
  const pins = o.packages.join(' ');
  const marker = installedMarker(venv, `${pins}${o.noDeps ? ' --no-deps' : ''}`);
  if (marker.done() && existsSync(join(venv, 'bin', 'python'))) return venv;
  o.log(`installing ${o.what} (${pins}${o.noDeps ? ', --no-deps' : ''}) from PyPI into ${venv}, once`);
  rmSync(venv, { recursive: true, force: true });
  const python = process.env.KVROUTE_BENCH_PYTHON ?? 'python3';
  await runStep(python, ['-m', 'venv', venv], {
    what: `creating the venv of ${o.what}`,
    missingHint: `${o.pythonHint}; KVROUTE_BENCH_PYTHON names another interpreter`,
    log: o.log,
  });
  const flags = ['install', '--disable-pip-version-check', '--no-input', '--quiet', ...(o.noDeps ? ['--no-deps'] : [])];
  await runStep(join(venv, 'bin', 'pip'), [...flags, ...o.packages], { what: `installing ${o.what}`, registry: 'PyPI', log: o.log });
  if (o.check) await runStep(join(venv, 'bin', 'python'), ['-c', o.check], { what: `checking the install of ${o.what}`, log: o.log });
  marker.record();
  return venv;
}
