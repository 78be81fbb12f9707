// The frontend benchmark's "world": everything that is not the router (the instant engine and the
// load generator), in a process of its own, as clients and engines are other machines in a real
// deployment. The engine runs on this process's main thread. An open-loop load (the overhead
// figure) runs on the same thread, so the world keeps to one core and the router has the other;
// a closed-loop load (throughput) gets a worker thread, so the load generator never limits it.
// Driven over IPC by world-process.ts.
import { startInstantEngine } from './instant-engine.js';
import { runLoad, type LoadOptions, type LoadResult } from './loadgen.js';
import { inThread } from './thread.js';

export type WorldRequest =
  | { op: 'load'; id: number; load: LoadOptions; ownThread: boolean }
  | { op: 'close' };

export type WorldReply = { op: 'ready'; engineUrls: string[]; streamingEngineUrl: string } | { op: 'loaded'; id: number; result?: LoadResult; error?: string };

const outputTokens = Number(process.env.KVROUTE_BENCH_OUTPUT_TOKENS ?? 4);
// The peers suite puts its routers in front of two engines; the frontend suite uses one.
const engines = await Promise.all(Array.from({ length: Number(process.env.KVROUTE_BENCH_ENGINES ?? 1) }, () => startInstantEngine(outputTokens)));
// A second engine streams longer answers a write per token, 1 ms apart (the per-token figure).
const streamingEngine = await startInstantEngine(Number(process.env.KVROUTE_BENCH_STREAM_TOKENS ?? 64), { tokenGapMs: 1 });
const send = (m: WorldReply) => process.send!(m);

process.on('message', (m: WorldRequest) => {
  if (m.op === 'close') {
    for (const engine of engines) engine.close();
    streamingEngine.close();
    process.disconnect();
    return;
  }
  void runLoadHere(m).then(
    (result) => send({ op: 'loaded', id: m.id, result }),
    (err: unknown) => send({ op: 'loaded', id: m.id, error: String((err as Error)?.stack ?? err) }),
  );
});
send({ op: 'ready', engineUrls: engines.map((e) => e.url), streamingEngineUrl: streamingEngine.url });

async function runLoadHere(m: { load: LoadOptions; ownThread: boolean }): Promise<LoadResult> {
  if (!m.ownThread) return runLoad(m.load);
  const t = inThread<LoadResult>(new URL('./loadgen-worker.ts', import.meta.url), m.load);
  try {
    return await t.result;
  } finally {
    await t.worker.terminate();
  }
}
