// SMG (the Shepherd Model Gateway, the Rust router spun out of SGLang), pinned, installed with pip
// into a venv of its own under bench/.cache/peers/ the first time the peers suite needs it (about
// 30 s and 100 MB: a wheel with the router built in).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { installVenv } from '../cache.js';

export const SMG_VERSION = '1.13.0';

/** The `smg` command of the pinned install, installing it first when needed. */
export async function installSmg(log: (line: string) => void): Promise<string> {
  const venv = await installVenv({
    folder: `smg-${SMG_VERSION}`,
    packages: [`smg==${SMG_VERSION}`],
    what: `SMG ${SMG_VERSION}`,
    pythonHint: 'SMG needs Python 3.9 or later',
    log,
  });
  const smg = join(venv, 'bin', 'smg');
  if (!existsSync(smg)) throw new Error(`SMG ${SMG_VERSION} is installed in ${venv} but has no bin/smg`);
  return smg;
}
