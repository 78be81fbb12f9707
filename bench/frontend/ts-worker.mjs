// Worker-thread bootstrap: registers tsx's loader inside the worker, then imports the TypeScript
// entry named in workerData.entry (module hooks are per thread on Node 20).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
