import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cachePath, installedMarker, installVenv, looksLikeNetworkTrouble, runStep } from '../../../bench/peers/cache.js';

const dir = mkdtempSync(join(tmpdir(), 'kvroute-peer-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('installing a peer', () => {
  it('recognizes a registry out of reach in cargo and pip messages, and nothing else', () => {
    expect(looksLikeNetworkTrouble('error: failed to get `dynamo-kv-router` as a dependency of package `kvroute-dynamo-indexer`')).toBe(true);
    expect(looksLikeNetworkTrouble('warning: spurious network error (3 tries remaining): [6] Could not resolve host: index.crates.io')).toBe(true);
    expect(looksLikeNetworkTrouble("WARNING: Retrying ... Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')")).toBe(true);
    expect(looksLikeNetworkTrouble('ERROR: Could not find a version that satisfies the requirement smg==1.13.0 (from versions: none)')).toBe(true);
    expect(looksLikeNetworkTrouble('error[E0308]: mismatched types')).toBe(false);
  });

  it('shows the output of a step and names what failed, with the registry when it looks unreachable', async () => {
    const lines: string[] = [];
    await runStep(process.execPath, ['-e', 'console.log("step one"); console.error("step two")'], { what: 'a step', log: (l) => lines.push(l) });
    expect(lines).toEqual(['  step one', '  step two']);
    const failing = runStep(process.execPath, ['-e', 'console.error("Could not resolve host: pypi.org"); process.exit(3)'], {
      what: 'installing smg 1.13.0',
      registry: 'PyPI',
    });
    await expect(failing).rejects.toThrow(
      /installing smg 1.13.0 failed \(exit 3\)[\s\S]*PyPI looks unreachable from this machine[\s\S]*Could not resolve host: pypi.org/,
    );
    const plain = runStep(process.execPath, ['-e', 'process.exit(1)'], { what: 'x', registry: 'PyPI' });
    await expect(plain).rejects.toThrow(/^x failed \(exit 1\)/);
    await expect(plain).rejects.not.toThrow(/unreachable/);
  });

  it('says which command is missing and how to get it', async () => {
    await expect(runStep('no-such-command-kvroute', [], { what: 'building the Dynamo peer', missingHint: 'install Rust' })).rejects.toThrow(
      'building the Dynamo peer: `no-such-command-kvroute` was not found (install Rust)',
    );
  });

  it('records an install once per version', () => {
    const m = installedMarker(dir, 'smg 1.13.0');
    expect(m.done()).toBe(false);
    m.record();
    expect(m.done()).toBe(true);
    expect(installedMarker(dir, 'smg 1.14.0').done()).toBe(false);
  });
});

describe('installVenv', () => {
  // A stand-in interpreter: `-m venv DIR` makes DIR/bin with a pip that logs its arguments (and
  // fails when told to) and a python that runs nothing; no network, no real pip.
  const fakePython = join(dir, 'fake-python');
  const calls = join(dir, 'pip-calls.log');
  writeFileSync(
    fakePython,
    `#!/bin/sh
set -e
[ "$1" = "-m" ] && [ "$2" = "venv" ] || exit 9
mkdir -p "$3/bin"
printf '#!/bin/sh\\necho "$*" >> ${calls}\\n[ -z "$FAKE_PIP_FAILS" ] || { echo "ERROR: Could not find a version that satisfies the requirement $*" >&2; exit 1; }\\n' > "$3/bin/pip"
printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/python"
chmod +x "$3/bin/pip" "$3/bin/python"
`,
  );
  chmodSync(fakePython, 0o755);
  const opts = (packages: string[]) => ({
    folder: `test-venv-${process.pid}`,
    packages,
    noDeps: true,
    what: 'a peer',
    pythonHint: 'needs Python',
    check: 'import peer',
    log: () => undefined,
  });

  it('installs the pins once, and again when they change', async () => {
    process.env.KVROUTE_BENCH_PYTHON = fakePython;
    try {
      const venv = await installVenv(opts(['peer==1.0']));
      await installVenv(opts(['peer==1.0']));
      expect(readFileSync(calls, 'utf8').trim().split('\n')).toEqual(['install --disable-pip-version-check --no-input --quiet --no-deps peer==1.0']);
      await installVenv(opts(['peer==2.0']));
      expect(readFileSync(calls, 'utf8')).toContain('peer==2.0');
      rmSync(venv, { recursive: true, force: true });
    } finally {
      delete process.env.KVROUTE_BENCH_PYTHON;
    }
  });

  it('says PyPI looks unreachable when pip cannot find the pinned version, and records nothing', async () => {
    process.env.KVROUTE_BENCH_PYTHON = fakePython;
    process.env.FAKE_PIP_FAILS = '1';
    try {
      await expect(installVenv(opts(['peer==3.0']))).rejects.toThrow(/installing a peer failed \(exit 1\)[\s\S]*PyPI looks unreachable/);
      delete process.env.FAKE_PIP_FAILS;
      await installVenv(opts(['peer==3.0'])); // tried again, since nothing was recorded
      expect(readFileSync(calls, 'utf8').match(/peer==3\.0/g)).toHaveLength(2);
    } finally {
      delete process.env.KVROUTE_BENCH_PYTHON;
      delete process.env.FAKE_PIP_FAILS;
      rmSync(cachePath(`test-venv-${process.pid}`), { recursive: true, force: true });
    }
  });
});
