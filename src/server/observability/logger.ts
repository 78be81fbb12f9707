// kvroute's own logger: pino, JSON lines on stderr (or pino-pretty's coloured lines when stderr is
// a terminal). Writes are synchronous: the router logs state changes, not requests (nothing per
// request at info), so a line costs nothing on the request path, and a line written just before
// the process exits is never lost in a buffer.
import { createRequire } from 'node:module';
import { pino, stdTimeFunctions, type DestinationStream } from 'pino';
import type { Logger, LogLevel } from '../../util/logger.js';

export interface LoggerOptions {
  /** Default 'info'. */
  level?: LogLevel;
  /** pino-pretty's human-readable lines instead of JSON (default: when stderr is a terminal). */
  pretty?: boolean;
  /** Where lines go (default: stderr, file descriptor 2). */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Fields of every line (default { name: 'kvroute' }). */
  base?: Record<string, unknown>;
}

export function createLogger(o: LoggerOptions = {}): Logger {
  const level = o.level ?? 'info';
  const pretty = o.pretty ?? (o.destination === undefined && process.stderr.isTTY === true);
  const options = { level, base: o.base ?? { name: 'kvroute', pid: process.pid }, timestamp: stdTimeFunctions.isoTime };
  if (pretty) return pino(options, prettyStream(o.destination));
  return pino(options, o.destination ?? pino.destination({ dest: 2, sync: true }));
}

/** pino-pretty in this thread (not a transport worker), loaded only when a terminal asks for it. */
function prettyStream(destination: LoggerOptions['destination']): DestinationStream {
  const require = createRequire(import.meta.url);
  const pretty = require('pino-pretty') as (o: Record<string, unknown>) => DestinationStream;
  return pretty({
    colorize: destination === undefined ? process.stderr.isTTY === true : false,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
    destination: destination ?? 2,
    sync: true,
  });
}
