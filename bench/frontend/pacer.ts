// Sends at given times from the calling thread without depending on its timers: a 1 ms
// setTimeout fires 1 to 2 ms late here (libuv counts whole milliseconds), so an open loop paced by
// timers at 1,000 req/s sent its requests in pairs 2 ms apart. A pacer thread wakes this thread
// at each send time instead.
import { startTsWorker } from './thread.js';

export interface Pacer {
  /** Resolves after `onTick` ran for every send time, or once stop() was called. */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/** Calls `onTick(i)` at offsetsMs[i] after the pacer thread started, for each i in order. */
export function pace(offsetsMs: Float64Array, onTick: (i: number) => void): Pacer {
  const worker = startTsWorker(new URL('./pacer-worker.ts', import.meta.url), { offsetsMs });
  let stopped = false;
  const done = new Promise<void>((resolve, reject) => {
    worker.on('message', (i: number) => {
      if (stopped) return;
      onTick(i);
      if (i === offsetsMs.length - 1) resolve();
    });
    worker.once('error', reject);
    worker.once('exit', () => resolve());
    if (offsetsMs.length === 0) resolve();
  });
  return {
    done,
    async stop() {
      stopped = true;
      await worker.terminate();
    },
  };
}
