// The frontend benchmark's "world": everything that is not the router (the instant engines and the
// load generator), in a process of its own, as clients and engines are other machines in a real
// deployment. Its layout (WorldLayout below) puts the engines on the main thread or
// each on a thread of its own. An open-loop load (the overhead figure) runs on the main thread; a
// closed-loop load (throughput) runs on a load-generator thread kept for the world's lifetime, so
// the load generator and the engines do not wait for each other. The engine that streams a token
// per write stays on the main thread. Driven over IPC by world-process.ts.
import { startInstantEngine, type InstantEngine } from './instant-engine.js';
import type { LoadThreadReply } from './load-thread.js';
import { runLoad, type LoadClient, type LoadOptions, type LoadResult } from './loadgen.js';
import { inThread, startTsWorker } from './thread.js';
import { currentThreadId } from './thread-cpu.js';

/** How the world spreads over its threads, the same for every router it serves. */
export interface WorldLayout {
  /** Each instant engine on a thread of its own, or all of them on the world's main thread. */
  engineThreads: boolean;
  /**
   * The closed-loop load generator's HTTP client (loadgen.ts). The open loop (the added-latency
   * figure) keeps undici's request(): with dispatch there, kvroute's added p99 at 500 req/s came
   * out 0.985 ms against 0.558 with request() in the same rotating rounds (6 rounds, 2026-11-28,
   * direct p99 0.234 against 0.372 ms), a change of the figure's own measuring, not of the router.
   */
  loadClient: LoadClient;
  /**
   * A closed-loop load on a thread started for it and ended after it, as the world ran before
   * 2026-11-28 (world-ab.ts measures it against the thread kept for the world's lifetime): booting
   * tsx and undici there took 370-530 ms of CPU per run. Its thread is not in `threads.load`.
   */
  loadThreadPerRun?: boolean;
}

export type WorldRequest = { op: 'load'; id: number; load: LoadOptions; ownThread: boolean } | { op: 'close' };

/** Thread ids of the world's parts (absent where /proc is). */
export interface WorldThreads {
  engine: number[];
  load: number[];
}

export type WorldReply =
  | { op: 'ready'; engineUrls: string[]; streamingEngineUrl: string; threads: WorldThreads }
  | { op: 'loaded'; id: number; result?: LoadResult; error?: string };

const {
  outputTokens,
  streamTokens,
  engines: engineCount,
  layout,
} = JSON.parse(process.argv[2]) as { outputTokens: number; streamTokens: number; engines: number; layout: WorldLayout };
const send = (m: WorldReply) => process.send!(m);
const known = (tid: number | undefined): number[] => (tid === undefined ? [] : [tid]);

/** An instant engine on a worker thread of its own. */
async function engineThread(): Promise<{ engine: InstantEngine; tid?: number }> {
  const worker = startTsWorker(new URL('./engine-thread.ts', import.meta.url), { outputTokens });
  const { url, tid } = await new Promise<{ url: string; tid?: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { engine: { url, close: () => worker.postMessage('close') }, tid };
}

const started = layout.engineThreads
  ? await Promise.all(Array.from({ length: engineCount }, engineThread))
  : await Promise.all(Array.from({ length: engineCount }, async () => ({ engine: await startInstantEngine(outputTokens), tid: currentThreadId() })));
const engines = started.map((s) => s.engine);
// An engine streaming longer answers a write per token, 1 ms apart (the per-token figure).
const streamingEngine = await startInstantEngine(streamTokens, { tokenGapMs: 1 });

/** The closed-loop load generator's thread: one load at a time, answered by id. */
const loadThread = startTsWorker(new URL('./load-thread.ts', import.meta.url), {});
const loadTid = await new Promise<number | undefined>((resolve, reject) => {
  loadThread.once('message', (m: LoadThreadReply) => resolve(m.op === 'ready' ? m.tid : undefined));
  loadThread.once('error', reject);
});
const inLoadThread = new Map<number, (m: LoadThreadReply & { op: 'loaded' }) => void>();
loadThread.on('message', (m: LoadThreadReply) => {
  if (m.op === 'loaded') inLoadThread.get(m.id)?.(m);
});
// A load thread that fails or ends fails the loads it was running (and the world with them).
const loadThreadLost = (why: string) => {
  for (const [id, reply] of inLoadThread) reply({ op: 'loaded', id, error: `the load-generator thread ${why}` });
};
loadThread.on('error', (err) => loadThreadLost(`failed: ${String(err.stack ?? err)}`));
loadThread.on('exit', (code) => loadThreadLost(`exited with code ${code}`));

process.on('message', (m: WorldRequest) => {
  if (m.op === 'close') {
    for (const engine of engines) engine.close();
    streamingEngine.close();
    void loadThread.terminate();
    process.disconnect();
    return;
  }
  const load = { ...m.load, client: m.load.client ?? (m.ownThread ? layout.loadClient : 'request') };
  if (m.ownThread && layout.loadThreadPerRun) {
    const t = inThread<LoadResult>(new URL('./loadgen-worker.ts', import.meta.url), load);
    void t.result
      .then(
        (result) => send({ op: 'loaded', id: m.id, result }),
        (err: unknown) => send({ op: 'loaded', id: m.id, error: String((err as Error)?.stack ?? err) }),
      )
      .finally(() => t.worker.terminate());
    return;
  }
  if (m.ownThread) {
    inLoadThread.set(m.id, (reply) => {
      inLoadThread.delete(m.id);
      send(reply);
    });
    loadThread.postMessage({ id: m.id, load });
    return;
  }
  void runLoad(load).then(
    (result) => send({ op: 'loaded', id: m.id, result }),
    (err: unknown) => send({ op: 'loaded', id: m.id, error: String((err as Error)?.stack ?? err) }),
  );
});
send({
  op: 'ready',
  engineUrls: engines.map((e) => e.url),
  streamingEngineUrl: streamingEngine.url,
  threads: { engine: started.flatMap((s) => known(s.tid)), load: known(loadTid) },
});
