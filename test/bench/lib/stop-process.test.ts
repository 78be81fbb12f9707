import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { stopProcess } from '../../../bench/lib/stop-process.js';

const node = (code: string) => spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'ignore'] });
const started = (child: ReturnType<typeof node>) => new Promise((resolve) => child.once('spawn', resolve));

describe('stopProcess', () => {
  it('asks, and waits for the child to exit by itself', async () => {
    const child = node("process.stdin.on('data', () => process.exit(0)); setInterval(() => {}, 1000);");
    await started(child);
    await stopProcess(child, () => child.stdin!.end('quit\n'), 10_000);
    expect(child.exitCode).toBe(0);
  });

  it('kills a child that does not stop when asked, after the grace period', async () => {
    const child = node("process.on('SIGTERM', () => {}); console.log('deaf'); setInterval(() => {}, 1000);");
    await new Promise((r) => child.stdout!.once('data', r)); // its SIGTERM handler is installed
    const t0 = Date.now();
    await stopProcess(child, () => child.kill('SIGTERM'), 300);
    expect(child.signalCode).toBe('SIGKILL');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  });

  it('returns at once for a child that already exited', async () => {
    const child = node('');
    await new Promise((r) => child.once('exit', r));
    let asked = false;
    await stopProcess(child, () => (asked = true));
    expect(asked).toBe(false);
  });
});
