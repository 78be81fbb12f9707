// The logger every layer logs through: the shape of pino's (and so of Fastify's `app.log`), so any
// layer can take one without depending on pino; src/server/observability/logger.ts makes kvroute's
// own. Levels follow pino: fatal > error > warn > info > debug > trace, and 'silent'.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogFn {
  /** A line with structured fields (`worker`, `request_id`, ...) and a message. */
  (fields: object, message?: string): void;
  (message: string): void;
}

export interface Logger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  /** A logger whose every line carries `bindings` (a request id, a component). */
  child(bindings: Record<string, unknown>): Logger;
  /** pino has it; a logger without it counts every level as enabled. */
  isLevelEnabled?(level: string): boolean;
}

const nothing: LogFn = () => undefined;

/** Logs nothing (the library's default: an embedding application passes its own logger). */
export const silentLogger: Logger = {
  fatal: nothing,
  error: nothing,
  warn: nothing,
  info: nothing,
  debug: nothing,
  trace: nothing,
  child: () => silentLogger,
  isLevelEnabled: () => false,
};

/** Whether a line at `level` would be written (so its fields are only built when it is). */
export function levelEnabled(log: Logger, level: Exclude<LogLevel, 'silent'>): boolean {
  return log.isLevelEnabled ? log.isLevelEnabled(level) : true;
}

/**
 * `user:password@` of a URL replaced by `***@`, for logs and answers: a worker's URL may carry
 * credentials, which never leave the process.
 */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
}
