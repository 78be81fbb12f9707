// kvroute as a user runs it in front of real engines: the built `dist/cli.js serve --config FILE`
// in a process of its own, its log kept (the suite reads what it reported), stopped with SIGTERM
// (a drain) or SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { ENGINES_CACHE } from './install.js';
import { parsePrometheus, type Samples } from './prometheus.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface EngineWorker {
  id: number;
  url: string;
  eventsPort?: number;
  replayPort?: number;
  role?: 'aggregated' | 'prefill' | 'decode';
}

export interface KvrouteProcess {
  readonly url: string;
  readonly pid: number;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  metrics(): Promise<Samples>;
  /** SIGTERM (a drain); resolves with its exit status once it exited. */
  terminate(): Promise<number | null>;
  /** Ends it now, if still running. */
  kill(): Promise<void>;
  exited(): Promise<number | null>;
}

/** The config file's content for these workers (RouterConfigInput). */
export function routerConfig(o: {
  port: number;
  model: string;
  tokenizer: string;
  blockSize: number;
  workers: readonly EngineWorker[];
  extra?: Record<string, unknown>;
}): Record<string, unknown> {
  return {
    host: '127.0.0.1',
    port: o.port,
    model: o.model,
    tokenizer: o.tokenizer,
    blockSize: o.blockSize,
    health: { intervalMs: 500, timeoutMs: 2000 },
    workers: o.workers.map((w) => ({
      id: w.id,
      role: w.role ?? 'aggregated',
      kind: 'vllm',
      baseUrl: w.url,
      ...(w.eventsPort ? { kvEvents: `tcp://127.0.0.1:${w.eventsPort}` } : {}),
      ...(w.replayPort ? { replayEndpoint: `tcp://127.0.0.1:${w.replayPort}` } : {}),
    })),
    ...o.extra,
  };
}

export async function startKvrouteProcess(name: string, config: Record<string, unknown>, extraArgs: readonly string[] = []): Promise<KvrouteProcess> {
  const dir = join(ENGINES_CACHE, 'logs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${process.pid}.config.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve', '--config', file, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  for (const s of [child.stdout!, child.stderr!]) {
    s.setEncoding('utf8');
    s.on('data', (d: string) => (out += d));
  }
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kvroute ${name} did not start in 30 s:\n${out}`)), 30_000);
    const look = () => {
      const m = /kvroute listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/$/, ''));
      }
    };
    child.stdout!.on('data', look);
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`kvroute ${name} exited (code ${code}) before listening:\n${out}`));
    });
  });
  return {
    url,
    pid: child.pid!,
    output: () => out,
    metrics: async () => parsePrometheus(await (await request(`${url}/metrics`)).body.text()),
    terminate: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exit;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
    exited: () => exit,
  };
}
