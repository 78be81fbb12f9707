// SMG (the Shepherd Model Gateway, the Rust router spun out of SGLang), pinned, installed with pip
// into a venv of its own under bench/.cache/peers/ the first time the peers suite needs it (about
// 30 s and 100 MB: a wheel with the router built in).
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cachePath, installedMarker, runStep } from '../cache.js';

export const SMG_PACKAGE = 'smg';
export const SMG_VERSION = '1.13.0';

/** The `smg` command of the pinned install, installing it first when needed. */
export async function installSmg(log: (line: string) => void): Promise<string> {
  const venv = cachePath(`smg-${SMG_VERSION}`);
  const smg = join(venv, 'bin', 'smg');
  const marker = installedMarker(venv, `${SMG_PACKAGE}==${SMG_VERSION}`);
  if (marker.done() && existsSync(smg)) return smg;
  log(`installing ${SMG_PACKAGE} ${SMG_VERSION} from PyPI into ${venv} (once; about 30 s)`);
  rmSync(venv, { recursive: true, force: true });
  const python = process.env.KVROUTE_BENCH_PYTHON ?? 'python3';
  await runStep(python, ['-m', 'venv', venv], { what: 'creating the SMG venv', missingHint: 'SMG needs Python 3.9 or later; KVROUTE_BENCH_PYTHON names another interpreter', log });
  await runStep(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--quiet', `${SMG_PACKAGE}==${SMG_VERSION}`], {
    what: `installing ${SMG_PACKAGE} ${SMG_VERSION}`,
    registry: 'PyPI',
    log,
  });
  if (!existsSync(smg)) throw new Error(`installing ${SMG_PACKAGE} ${SMG_VERSION}: pip finished but ${smg} is missing`);
  marker.record();
  return smg;
}
