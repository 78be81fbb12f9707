// `npm run pack:all [-- --out DIR] [--only linux-x64-gnu,...] [--no-build]`: builds, then packs
// kvroute and its platform packages into DIR (default release/), and prints their sizes.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packAll } from './pack.js';
import { REPO_ROOT } from './prebuilt-targets.js';

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: { out: { type: 'string', default: join(REPO_ROOT, 'release') }, only: { type: 'string' }, 'no-build': { type: 'boolean' } },
  });
  const result = packAll({ outDir: values.out, platforms: values.only?.split(','), build: !values['no-build'] });
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  for (const t of [result.main, ...result.platforms]) {
    console.log(`${t.file}  ${kib(t.size)} packed, ${kib(t.unpackedSize)} unpacked, ${t.entryCount} files`);
  }
}

main(process.argv.slice(2));
