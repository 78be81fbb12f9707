// Imports one module and prints, as JSON, how long the import took and every module it loaded:
// ES modules (through module-log-hooks.mjs) and CommonJS ones, native addons included (require's
// cache). Usage: node loaded-modules.mjs <specifier or file URL>. A bare specifier resolves from
// this file's folder, so a test copies this file into the project whose packages it inspects.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const specifier = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), 'kvroute-modules-'));
const logFile = join(dir, 'resolved.txt');
try {
  register(new URL('./module-log-hooks.mjs', import.meta.url), { data: { logFile } });
  const start = performance.now();
  await import(specifier);
  const importMs = performance.now() - start;
  const esm = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith('file:'))
    .map((url) => fileURLToPath(url));
  const cjs = Object.keys(createRequire(import.meta.url).cache);
  const files = [...new Set([...esm, ...cjs])].sort();
  process.stdout.write(`${JSON.stringify({ importMs, files })}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
