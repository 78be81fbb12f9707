// Runs a bench module's function in a worker thread (the bench world's closed-loop load generator,
// beside the engine's thread). The worker loads TypeScript through tsx (see ts-worker.mjs).
import { Worker } from 'node:worker_threads';

/** Starts the TypeScript module `file` in a worker thread, `data` as its workerData. */
export function startTsWorker(file: URL, data: object): Worker {
  return new Worker(new URL('./ts-worker.mjs', import.meta.url), { workerData: { ...data, entry: file.href } });
}

/** Starts `file` in a worker with `data`; resolves with the first message it posts. */
export function inThread<T>(file: URL, data: unknown): { result: Promise<T>; worker: Worker } {
  const worker = startTsWorker(file, data as object);
  const result = new Promise<T>((resolve, reject) => {
    worker.once('message', (m: T) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`bench worker exited with code ${code} before answering`)));
  });
  return { result, worker };
}
