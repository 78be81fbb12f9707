// kvroute's own logger (pino), writing into memory: the lines a test can read back as objects.
import { Writable } from 'node:stream';
import { createLogger } from '../../src/server/observability/logger.js';
import type { Logger, LogLevel } from '../../src/util/logger.js';

export interface CapturedLog {
  logger: Logger;
  /** Every line written so far, parsed. */
  lines(): Array<Record<string, unknown> & { level: number; msg: string }>;
  /** The raw text written so far. */
  text(): string;
}

export function captureLog(level: LogLevel = 'info'): CapturedLog {
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    logger: createLogger({ level, destination, pretty: false }),
    lines: () =>
      text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown> & { level: number; msg: string }),
    text: () => text,
  };
}
