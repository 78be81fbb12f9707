// Real `kvroute` processes for the tests that need them (signals, exit statuses, ports held by
// another process): spawned from src/ through tsx, their output collected, always killed at the end.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  /** Waits until the output matches (throws with the output when the process ends first or time runs out). */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpExecArray>;
  /** The exit status (128 + n for a signal that killed it), once it exits. */
  exited(ms?: number): Promise<number>;
  /** SIGKILL if still running (test cleanup). */
  kill(): void;
}

const running = new Set<ChildProcess>();

/** `kvroute <args>` as a process of its own. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  return track(
    spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } }),
  );
}

/** Any command, tracked and collected the same way. */
export function spawnTracked(command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; detached?: boolean } = {}): CliProcess {
  return track(spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env }, detached: opts.detached }));
}

function track(child: ChildProcess): CliProcess {
  running.add(child);
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exit = new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? 128 + (signal ? signalNumber(signal) : 0));
    });
  });
  return {
    child,
    output: () => out,
    async waitFor(pattern, ms = 30_000) {
      const end = Date.now() + ms;
      for (;;) {
        const m = pattern.exec(out);
        if (m) return m;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the process ended (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${out}`);
        if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async exited(ms = 30_000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the process did not exit within ${ms} ms:\n${out}`)), ms)));
      try {
        return await Promise.race([exit, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Kills every process a test left running (call from afterEach). */
export function killAll(): void {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

function signalNumber(signal: NodeJS.Signals): number {
  return ({ SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[signal] ?? 0;
}

/** A port free right now (the system's pick, released again). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Whether `command --version` runs: a server or browser from a Debian package the tests need. */
export function commandInstalled(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
