// Runs a bench module's function in a worker thread (so the load generator and the engine do not
// share the router's event loop). The worker loads TypeScript through tsx (see ts-worker.mjs).
import { Worker } from 'node:worker_threads';

/** Starts `file` in a worker with `data`; resolves with the first message it posts. */
export function inThread<T>(file: URL, data: unknown): { result: Promise<T>; worker: Worker } {
  const bootstrap = new URL('./ts-worker.mjs', import.meta.url);
  const worker = new Worker(bootstrap, { workerData: { ...(data as object), entry: file.href } });
  const result = new Promise<T>((resolve, reject) => {
    worker.once('message', (m: T) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`bench worker exited with code ${code} before answering`)));
  });
  return { result, worker };
}

/** Asks a worker to stop (any message) and waits for it to exit on its own: uWebSockets.js must
 * close its sockets inside the thread, a terminate() with them open aborts the process. */
export async function stopThread(worker: Worker, timeoutMs = 5_000): Promise<void> {
  if (worker.threadId === -1) return;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage('close');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
  if ((await Promise.race([exited, late])) === 'late') await worker.terminate();
  clearTimeout(timer);
}
