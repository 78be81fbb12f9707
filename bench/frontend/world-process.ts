// Starts the frontend benchmark's world (world.ts: the instant engine and the load generator) as a
// child process and drives it. A separate process keeps the router's process as it runs in
// production: alone on its heap, its GC helper threads and its V8 flags. The world runs with V8's
// allocation-site pretenuring off: after the closed-loop warm-up, V8 otherwise moved the load
// generator's per-request objects to the old generation and ran a full GC there every ~350 ms
// (54 in 25 s, measured), stalls of 10-15 ms that landed in the latencies of both paths.
import { fork, type ChildProcess } from 'node:child_process';
import { stopProcess } from '../lib/stop-process.js';
import type { LoadOptions, LoadResult } from './loadgen.js';
import type { WorldLayout, WorldReply, WorldRequest, WorldThreads } from './world.js';

export type { WorldLayout } from './world.js';

/**
 * The engines on the main thread (on threads of their own they only waited longer for the 2 cores,
 * no round got faster) and undici's dispatch in the closed loop (2-11 us less load-generator CPU
 * per request than request() in two runs of world-ab.ts, 2026-11-28).
 */
export const DEFAULT_WORLD_LAYOUT: WorldLayout = { engineThreads: false, loadClient: 'dispatch' };

export interface World {
  /** The world's process (its CPU time is the engines' and the load generator's). */
  pid: number;
  /** The first engine. */
  engineUrl: string;
  /** Every instant engine (startWorld's `engines`). */
  engineUrls: string[];
  /** An engine that streams `streamTokens` tokens a write per token, 1 ms apart. */
  streamingEngineUrl: string;
  /** Thread ids of the engines and of the closed-loop load generator (per-thread CPU, thread-shares.ts). */
  threads: WorldThreads;
  layout: WorldLayout;
  /**
   * Runs a load. `ownThread`: the load generator gets its own thread (closed loop: as fast as
   * possible); otherwise it shares the engine's.
   */
  load(load: LoadOptions, o: { ownThread: boolean }): Promise<LoadResult>;
  close(): Promise<void>;
}

export async function startWorld(outputTokens: number, streamTokens = 64, engines = 1, layout: WorldLayout = DEFAULT_WORLD_LAYOUT): Promise<World> {
  const child = fork(new URL('./world.ts', import.meta.url), [JSON.stringify({ outputTokens, streamTokens, engines, layout })], {
    execArgv: ['--import', 'tsx', '--no-allocation-site-pretenuring'],
    serialization: 'advanced', // the latency arrays cross as Float64Arrays
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let exited: Error | undefined;
  const { engineUrls, streamingEngineUrl, threads } = await new Promise<{ engineUrls: string[]; streamingEngineUrl: string; threads: WorldThreads }>(
    (resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`the bench world exited with code ${code} before it was ready`)));
      child.once('message', (m: WorldReply) => (m.op === 'ready' ? resolve(m) : reject(new Error(`unexpected ${m.op}`))));
    },
  );
  child.removeAllListeners('exit');
  child.on('exit', (code) => {
    exited = new Error(`the bench world exited with code ${code}`);
    for (const p of pending.values()) p.reject(exited);
    pending.clear();
  });
  child.on('message', (m: WorldReply) => {
    if (m.op !== 'loaded') return;
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.error !== undefined) p?.reject(new Error(`bench world: ${m.error}`));
    else p?.resolve(m.result!);
  });
  return {
    pid: child.pid!,
    engineUrl: engineUrls[0],
    engineUrls,
    streamingEngineUrl,
    threads,
    layout,
    load(load, o) {
      if (exited) return Promise.reject(exited);
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        request(child, { op: 'load', id, load, ownThread: o.ownThread });
      });
    },
    close: () => closeWorld(child),
  };
}

function request(child: ChildProcess, m: WorldRequest): void {
  child.send(m);
}

function closeWorld(child: ChildProcess): Promise<void> {
  return stopProcess(child, () => request(child, { op: 'close' }));
}
