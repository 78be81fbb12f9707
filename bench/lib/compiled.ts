// The package as `kvroute serve` runs it: the compiled dist/. Suites that time the router's own CPU
// load it from there, not src/ under the bench's TypeScript loader: tsx's output wraps every
// closure in a __name() call (esbuild's keepNames), which cost the router about 35 us of CPU per
// request in the SMG comparison (2026-11-28). A suite compiles first (its prepare), so dist/ is
// never stale.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = new URL('../../', import.meta.url);
const DIST = new URL('dist/', ROOT);

/** `npm run build:ts` (src/ to dist/). */
export async function compilePackage(log: (line: string) => void): Promise<void> {
  log('compiling kvroute (npm run build:ts): the router runs the compiled package');
  await promisify(execFile)('npm', ['run', 'build:ts', '--silent'], { cwd: fileURLToPath(ROOT) });
}

/** Imports `path` (relative to dist/, e.g. 'server/app/router.js'), typed as its source module `T`. */
export async function importCompiled<T>(path: string): Promise<T> {
  const url = new URL(path, DIST);
  if (!existsSync(fileURLToPath(url))) throw new Error(`${fileURLToPath(url)} is missing: run npm run build:ts first`);
  return (await import(url.href)) as T;
}
