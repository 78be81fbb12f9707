// The pacer's thread: sleeps until each send time (a futex wait, precise to tens of microseconds,
// where the event loop's timers round to whole milliseconds and fire up to one late) and posts
// the request's index to the load generator's thread.
import { parentPort, workerData } from 'node:worker_threads';

const { offsetsMs } = workerData as { offsetsMs: Float64Array };
const sleeper = new Int32Array(new SharedArrayBuffer(4));

// The schedule starts when this thread is ready (loading it takes tens of milliseconds).
const start = performance.now();
for (let i = 0; i < offsetsMs.length; i++) {
  const due = start + offsetsMs[i];
  for (let wait = due - performance.now(); wait > 0; wait = due - performance.now()) Atomics.wait(sleeper, 0, 0, wait);
  parentPort!.postMessage(i);
}
