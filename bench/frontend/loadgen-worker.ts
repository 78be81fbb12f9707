// Worker-thread entry: one runLoad with the options in workerData; posts the result.
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadOptions } from './loadgen.js';

const result = await runLoad(workerData as LoadOptions);
parentPort!.postMessage(result);
