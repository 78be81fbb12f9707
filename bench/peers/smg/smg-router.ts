// SMG as the peers suite runs it: `smg launch --policy cache_aware` on loopback with no workers,
// the tokenizer folder as its model path, then each engine added with POST /workers
// (runtime_type vllm, the served model named so that requests for it find the workers), ready
// once GET /workers shows every worker healthy.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { request } from 'undici';
import { stopProcess } from '../../lib/stop-process.js';

export interface SmgOptions {
  smg: string;
  /** A HuggingFace model folder holding tokenizer.json and tokenizer_config.json. */
  tokenizerDir: string;
  model: string;
  workers: readonly string[];
  log?: (line: string) => void;
}

export interface RunningSmg {
  url: string;
  pid: number;
  close(): Promise<void>;
}

/** A port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** The body of POST /workers for one engine. */
export function workerBody(url: string, model: string): { url: string; runtime_type: 'vllm'; models: Array<{ id: string }> } {
  return { url, runtime_type: 'vllm', models: [{ id: model }] };
}

interface WorkerList {
  workers: Array<{ url: string; is_healthy: boolean; status?: string }>;
}

/** Whether GET /workers lists every engine as healthy and ready. */
export function workersReady(list: WorkerList, urls: readonly string[]): boolean {
  return urls.every((u) => list.workers.some((w) => w.url === u && w.is_healthy && (w.status === undefined || w.status === 'ready')));
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, failed: () => string | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = failed();
    if (why) throw new Error(`${what}: ${why}`);
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startSmg(o: SmgOptions): Promise<RunningSmg> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const args = ['launch', '--host', '127.0.0.1', '--port', String(port), '--policy', 'cache_aware', '--model-path', o.tokenizerDir];
  args.push('--prometheus-host', '127.0.0.1', '--prometheus-port', String(metricsPort), '--log-level', 'warn');
  const child: ChildProcess = spawn(o.smg, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `smg exited (${signal ?? `code ${code}`}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`));
  child.once('error', (err) => (exited = `cannot start ${o.smg}: ${err.message}`));
  const url = `http://127.0.0.1:${port}`;
  const close = () => stopProcess(child, () => child.kill('SIGTERM'));
  try {
    await until(
      'starting smg',
      60_000,
      async () => ((await request(`${url}/health`)).statusCode === 200 ? true : undefined),
      () => exited,
    );
    for (const w of o.workers) {
      const res = await request(`${url}/workers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(workerBody(w, o.model)),
      });
      const text = await res.body.text();
      if (res.statusCode >= 300) throw new Error(`smg refused worker ${w}: ${res.statusCode} ${text}`);
    }
    await until(
      'adding the workers to smg',
      60_000,
      async () => {
        const list = (await (await request(`${url}/workers`)).body.json()) as WorkerList;
        return workersReady(list, o.workers) ? true : undefined;
      },
      () => exited,
    );
    o.log?.(`smg ${url} (pid ${child.pid}) routes to ${o.workers.join(', ')}`);
    return { url, pid: child.pid!, close };
  } catch (err) {
    await close();
    throw err;
  }
}
