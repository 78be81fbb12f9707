// Worker-thread entry: one instant engine on a thread of its own (the world's engine threads, see
// world.ts). Posts its URL and thread id; closes the engine when told, which ends the thread.
import { parentPort, workerData } from 'node:worker_threads';
import { startInstantEngine } from './instant-engine.js';
import { currentThreadId } from './thread-cpu.js';

const { outputTokens } = workerData as { outputTokens: number };
const engine = await startInstantEngine(outputTokens);
parentPort!.once('message', () => {
  engine.close();
  parentPort!.close();
});
parentPort!.postMessage({ url: engine.url, tid: currentThreadId() });
