// GET /live probes from a process of their own (the world's main thread also runs the engines,
// whose work on 48k-token bodies would delay the probes there): `runProbes` forks this file,
// which sends the probes at a steady rate and answers with their latencies.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runLoad, type LoadResult } from '../frontend/loadgen.js';

/** The argument that makes this file the probe process (the suite's process imports it too). */
const AS_PROBE = '--kvroute-live-probe';

export interface ProbeOptions {
  url: string;
  ratePerS: number;
  seconds: number;
}

/** Probes GET /live at `ratePerS` for `seconds`; resolves with the load generator's result. */
export function runProbes(o: ProbeOptions): Promise<LoadResult> {
  const child = fork(fileURLToPath(import.meta.url), [AS_PROBE, JSON.stringify(o)], {
    execArgv: ['--import', 'tsx'],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { result?: LoadResult; error?: string }) => (m.result ? resolve(m.result) : reject(new Error(`probe: ${m.error}`))));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`the probe process exited with code ${code}`)));
  });
}

if (process.send && process.argv[2] === AS_PROBE) {
  const o = JSON.parse(process.argv[3]) as ProbeOptions;
  const requests = Math.ceil(o.ratePerS * o.seconds);
  runLoad({ url: o.url, path: '/live', method: 'GET', body: '', concurrency: 4, requests, maxMs: o.seconds * 1000 + 5_000, ratePerS: o.ratePerS })
    .then((result) => process.send!({ result }, () => process.exit(0)))
    .catch((err: unknown) => process.send!({ error: String((err as Error)?.stack ?? err) }, () => process.exit(1)));
}
