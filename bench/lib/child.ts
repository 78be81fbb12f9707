// Runs one suite in its own process (started by bench/run.ts): a fresh heap for every suite, and a
// crash or a hang cannot take the harness down. Progress and the result travel over IPC.
import { pathToFileURL } from 'node:url';
import { expectSuite, expectSuiteResult } from './suite.js';

export type ChildMessage =
  | { type: 'progress'; message: string }
  /** The suite's prepare() finished (or it has none): its time limit starts now. */
  | { type: 'prepared' }
  | { type: 'result'; result: unknown }
  | { type: 'error'; error: string };

function send(msg: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) {
      reject(new Error('bench/lib/child.ts runs under bench/run.ts (no IPC channel)'));
      return;
    }
    process.send(msg, undefined, undefined, (err) => (err ? reject(err) : resolve()));
  });
}

async function main(): Promise<void> {
  const [file, quickFlag] = process.argv.slice(2);
  try {
    const mod = (await import(pathToFileURL(file).href)) as { suite?: unknown };
    const suite = expectSuite(mod.suite, file);
    const ctx = {
      quick: quickFlag === 'quick',
      progress: (message: string) => void send({ type: 'progress', message: String(message) }).catch(() => undefined),
    };
    const prepared = suite.prepare ? await suite.prepare(ctx) : undefined;
    await send({ type: 'prepared' });
    const result = expectSuiteResult(await suite.run(ctx, prepared), suite.name);
    await send({ type: 'result', result });
  } catch (err) {
    await send({ type: 'error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  // Suites close what they open; exiting here also ends a suite that forgot a timer or a socket.
  process.disconnect?.();
  process.exit(0);
}

void main();
