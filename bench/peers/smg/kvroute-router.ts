// Starts and stops the kvroute router process (kvroute-router-process.mjs) in front of the
// engines: the kv policy, the real tokenizer (text prompts are tokenized by kvroute, token-id
// prompts taken as they are), and the approximate indexer (the engines publish no KV events, so
// the router learns from its own decisions, as SMG's cache_aware tree does).
import { execFile, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROUTER_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { stopProcess } from '../../lib/stop-process.js';

export interface KvrouteRouterOptions {
  tokenizerDir: string;
  model: string;
  workers: readonly string[];
}

export interface RunningKvroute {
  url: string;
  pid: number;
  close(): Promise<void>;
}

/** The router's configuration (RouterConfigInput) for these engines. */
export function kvrouteConfig(o: KvrouteRouterOptions): object {
  return {
    host: '127.0.0.1',
    port: 0,
    model: o.model,
    tokenizer: o.tokenizerDir,
    indexerMode: 'approximate',
    routing: { policy: 'kv' },
    blockSize: 16,
    health: { intervalMs: 0 },
    maxBodyBytes: 16 << 20,
    workers: o.workers.map((baseUrl, id) => ({ id, role: 'aggregated', kind: 'vllm', baseUrl })),
  };
}

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Compiles the package (`npm run build:ts`: src/ to dist/), which the router process runs: the
 * figures are those of the code `kvroute serve` runs, and dist/ is never stale.
 */
export async function buildKvroute(log: (line: string) => void): Promise<void> {
  log('compiling kvroute (npm run build:ts) for the router process');
  await promisify(execFile)('npm', ['run', 'build:ts', '--silent'], { cwd: ROOT });
}

export async function startKvroute(o: KvrouteRouterOptions): Promise<RunningKvroute> {
  const child = fork(new URL('./kvroute-router-process.mjs', import.meta.url), [], {
    execArgv: [...ROUTER_NODE_FLAGS],
    env: { ...process.env, KVROUTE_PEERS_ROUTER_CONFIG: JSON.stringify(kvrouteConfig(o)) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve(m.url));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the kvroute router exited (code ${code}) before listening: ${stderr.trim()}`)));
  });
  child.removeAllListeners('exit');
  return {
    url,
    pid: child.pid!,
    close: () => stopProcess(child, () => child.send('close')),
  };
}
