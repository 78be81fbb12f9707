// A fleet as an operator runs it, for the faults suite: four `kvroute mock` worker processes and a
// `kvroute serve` router process in front of them (its own flags), each on ports the system
// chooses, so that a killed worker's ports (held for the TIME_WAIT of its connections) are never
// reused. Workers are separate processes so that one can be SIGKILLed.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopProcess } from '../lib/stop-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Proc {
  readonly child: ChildProcess;
  output(): string;
}

function kvroute(args: string[]): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  return { child, output: () => out };
}

async function waitFor(p: Proc, pattern: RegExp, ms = 60_000): Promise<RegExpExecArray> {
  const end = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(p.output());
    if (m) return m;
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`kvroute ended before printing ${pattern}:\n${p.output()}`);
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface FaultFleet {
  /** The router's base URL. */
  url: string;
  /** The workers' ids, in order. */
  ids: number[];
  /** SIGKILLs worker `id`'s process; resolves once it is gone. */
  kill(id: number): Promise<void>;
  close(): Promise<void>;
}

export interface FaultFleetOptions {
  workers: number;
  /** The router's flags beyond ports, workers and logging (--max-retries, --no-ejection, ...). */
  routerFlags: string[];
  /** The mock engines' speedup (their modelled times divided by it). */
  speedup: number;
}

export async function startFaultFleet(o: FaultFleetOptions): Promise<FaultFleet> {
  const ids = Array.from({ length: o.workers }, (_, i) => i + 1);
  const mocks = new Map<number, Proc>();
  let router: Proc | undefined;
  const close = async () => {
    await Promise.all([router, ...mocks.values()].map((p) => p && stopProcess(p.child, () => p.child.kill('SIGKILL'))));
  };
  try {
    const endpoints = await Promise.all(
      ids.map(async (id) => {
        const p = kvroute([
          'mock',
          '--id',
          String(id),
          '--port',
          '0',
          '--zmq-port',
          '0',
          '--replay-port',
          '0',
          '--speedup',
          String(o.speedup),
          '--log-level',
          'error',
        ]);
        mocks.set(id, p);
        const m = await waitFor(p, /http (http:\/\/\S+)\s+events (tcp:\/\/\S+)\s+replay (tcp:\/\/\S+)/);
        return `id=${id},url=${m[1]},events=${m[2]},replay=${m[3]}`;
      }),
    );
    router = kvroute(['serve', '--port', '0', '--log-level', 'error', ...o.routerFlags, ...endpoints.flatMap((w) => ['--worker', w])]);
    const url = (await waitFor(router, /kvroute listening on (http:\/\/\S+)/))[1];
    return {
      url,
      ids,
      async kill(id) {
        const p = mocks.get(id);
        if (!p) throw new RangeError(`no worker ${id}`);
        await stopProcess(p.child, () => p.child.kill('SIGKILL'));
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
