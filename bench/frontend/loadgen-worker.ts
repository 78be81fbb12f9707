// Worker-thread entry: runLoad with the options in workerData (an array: several loads at once,
// interleaved on this thread); posts the result (or the array of results).
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadOptions } from './loadgen.js';

const data = workerData as (LoadOptions & { loads?: LoadOptions[] });
const result = data.loads ? await Promise.all(data.loads.map(runLoad)) : await runLoad(data);
parentPort!.postMessage(result);
