// How `kvroute serve` and `kvroute mock` stop: the first SIGTERM or SIGINT drains (the command's
// own `drain`, bounded by its drain timeout) and ends with status 0; a second signal, while the
// drain runs, exits at once with 128 + the signal's number, as a shell reports a killed process.
//
// One Ctrl-C can arrive twice: under `npm start` the terminal sends SIGINT to the whole process
// group, node included, and npm forwards its own copy to node a few milliseconds later. The same
// signal again within REPEAT_MS counts as that one press, not as a second.
import { constants } from 'node:os';
import type { Logger } from '../util/logger.js';

const REPEAT_MS = 250;

/** Resolves with the exit status once a signal's drain finished (1 if it failed). */
export function onStopSignals(log: Logger, drainTimeoutMs: number, drain: () => Promise<string>, signal?: AbortSignal): Promise<number> {
  return new Promise((resolve) => {
    let first: { name: string; at: number } | undefined;
    const stop = (name: 'SIGINT' | 'SIGTERM' | 'abort') => {
      if (first) {
        if (name === 'abort' || (name === first.name && Date.now() - first.at < REPEAT_MS)) return;
        log.warn({ signal: name }, 'second signal: exiting at once');
        process.exit(128 + constants.signals[name]);
      }
      first = { name, at: Date.now() };
      log.info({ signal: name, drain_timeout_ms: drainTimeoutMs }, 'stopping: draining requests in flight (a second signal exits at once)');
      drain().then(
        (summary) => {
          log.info({ signal: name }, `stopped: ${summary}`);
          finish(0);
        },
        (err: unknown) => {
          log.error({ err }, 'stopping failed');
          finish(1);
        },
      );
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    const onAbort = () => stop('abort');
    const finish = (status: number) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      signal?.removeEventListener('abort', onAbort);
      resolve(status);
    };
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    if (signal?.aborted) stop('abort');
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
