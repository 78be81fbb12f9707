// Worker-thread entry: runLoad with the options in workerData; posts the result.
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadOptions } from './loadgen.js';

parentPort!.postMessage(await runLoad(workerData as LoadOptions));
