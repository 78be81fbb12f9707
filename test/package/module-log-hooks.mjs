// Module hooks for loaded-modules.mjs: appends every ESM resolution's URL to a file. Hooks run on
// a thread of their own; a synchronous append is on disk before the import that caused it ends.
import { appendFileSync } from 'node:fs';

/** @type {string} */
let logFile;

/** @param {{ logFile: string }} data */
export function initialize(data) {
  logFile = data.logFile;
}

/**
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<{ url: string }>} next
 */
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(logFile, `${result.url}\n`);
  return result;
}
