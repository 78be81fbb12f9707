// Worker-thread entry: an instant engine; posts its URL, closes on any message.
import { parentPort, workerData } from 'node:worker_threads';
import { startInstantEngine } from './instant-engine.js';

const engine = await startInstantEngine((workerData as { outputTokens: number }).outputTokens);
parentPort!.postMessage(engine.url);
parentPort!.once('message', () => {
  engine.close();
  parentPort!.close();
});
