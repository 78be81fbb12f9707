// Starts and stops the kvroute router process (kvroute-router-process.mjs) in front of the
// engines: the kv policy, the real tokenizer (text prompts are tokenized by kvroute, token-id
// prompts taken as they are), and the approximate indexer (the engines publish no KV events, so
// the router learns from its own decisions, as SMG's cache_aware tree does).
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { ROUTER_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { stopProcess } from '../../lib/stop-process.js';

export interface KvrouteRouterOptions {
  tokenizerDir: string;
  model: string;
  workers: readonly string[];
  /** The router process's node flags (default: npm start's, src/cli/node-flags.ts). */
  nodeFlags?: readonly string[];
  /** Count the process's GC pauses (its gcStats() answers them). */
  gcStats?: boolean;
  /** Record each request's stage times (its stages() answers them; stage-probe.ts). */
  stages?: boolean;
  /** The router process script (default this folder's kvroute-router-process.mjs); router-ab.ts runs a copy beside another build's dist/. */
  processScript?: URL;
  /** Let fullGc() force a full GC in the router (node's --expose-gc). */
  forcibleGc?: boolean;
  /** Write the router's --trace-gc-nvp lines (its stdout) to this file (gc-trace.ts reads them). */
  traceGcFile?: string;
  /** Merged over the configuration kvrouteConfig() gives (replicas, routerQueue, ...). */
  config?: Record<string, unknown>;
}

/** What the router process recorded since the previous stages() (router-stages.mjs). */
export interface RouterStages {
  /** The columns of a row: hrtime ns of uWS entry, body complete, engine call created, its head built, its body written, engine head read, engine response done, client response ended. */
  fields: readonly string[];
  /** Row i (fields.length entries) for the request with X-Request-Id `<run>.<i>`; null where not recorded. */
  rows: Array<number | null>;
  /** The entries per GC pause in gc. */
  gcFields: readonly string[];
  /** GC pauses, gcFields.length entries each: start ns, duration ns, perf_hooks kind and flags, young generation capacity and use and external memory after it (bytes). */
  gc: number[];
  /** New connections to the engines: flat pairs, connect start and end (ns). */
  connects: number[];
  /** The process's threads (their names) when asked. */
  threads: string[];
}

/** GC pauses since the router started, per perf_hooks GC kind (1 scavenge, 4 mark-compact, ...); maxMs since the previous gcStats(). */
export type RouterGcStats = Record<string, { count: number; totalMs: number; maxMs: number; over1Ms: number }>;

export interface RunningKvroute {
  url: string;
  pid: number;
  close(): Promise<void>;
  /** Its GC pauses so far; empty unless started with gcStats. */
  gcStats(): Promise<RouterGcStats>;
  /** Its stage times since the last call; empty unless started with stages. */
  stages(): Promise<RouterStages>;
  /** Forces a full (mark-compact) GC in the router; false unless started with forcibleGc. */
  fullGc(): Promise<boolean>;
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
    ...o.config,
  };
}

export async function startKvroute(o: KvrouteRouterOptions): Promise<RunningKvroute> {
  const flags = [...(o.nodeFlags ?? ROUTER_NODE_FLAGS), ...(o.forcibleGc ? ['--expose-gc'] : []), ...(o.traceGcFile ? ['--trace-gc-nvp'] : [])];
  // The child writes to its own copy of the descriptor; ours is closed once it is spawned.
  const stdout = o.traceGcFile ? openSync(o.traceGcFile, 'w') : 'ignore';
  const child = fork(o.processScript ?? new URL('./kvroute-router-process.mjs', import.meta.url), [], {
    execArgv: flags,
    env: {
      ...process.env,
      KVROUTE_PEERS_ROUTER_CONFIG: JSON.stringify(kvrouteConfig(o)),
      ...(o.gcStats ? { KVROUTE_PEERS_ROUTER_GC_STATS: '1' } : {}),
      ...(o.stages ? { KVROUTE_PEERS_ROUTER_STAGES: '1' } : {}),
    },
    stdio: ['ignore', stdout, 'pipe', 'ipc'],
  });
  if (typeof stdout === 'number') closeSync(stdout);
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
    gcStats: () => ask<RouterGcStats>(child, 'gc'),
    stages: () => ask<RouterStages>(child, 'stages'),
    fullGc: () => ask<boolean>(child, 'fullGc'),
  };
}

/** Sends `question` to the router process and resolves with the `question` field of its answer. */
function ask<T>(child: ChildProcess, question: 'gc' | 'stages' | 'fullGc'): Promise<T> {
  return new Promise<T>((resolve) => {
    const answer = (m: Record<string, unknown>) => {
      if (!(question in m)) return;
      child.off('message', answer);
      resolve(m[question] as T);
    };
    child.on('message', answer);
    child.send(question);
  });
}
