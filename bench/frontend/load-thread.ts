// Worker-thread entry: the world's closed-loop load generator, kept for the world's lifetime (a
// thread started per run spent tens of milliseconds of CPU loading tsx and undici into the round
// it measured). Posts its thread id once, then runs one load per message.
import { parentPort } from 'node:worker_threads';
import { runLoad, type LoadOptions, type LoadResult } from './loadgen.js';
import { currentThreadId } from './thread-cpu.js';

export type LoadThreadReply = { op: 'ready'; tid?: number } | { op: 'loaded'; id: number; result?: LoadResult; error?: string };

parentPort!.on('message', (m: { id: number; load: LoadOptions }) => {
  runLoad(m.load).then(
    (result) => parentPort!.postMessage({ op: 'loaded', id: m.id, result } satisfies LoadThreadReply),
    (err: unknown) => parentPort!.postMessage({ op: 'loaded', id: m.id, error: String((err as Error)?.stack ?? err) } satisfies LoadThreadReply),
  );
});
parentPort!.postMessage({ op: 'ready', tid: currentThreadId() } satisfies LoadThreadReply);
