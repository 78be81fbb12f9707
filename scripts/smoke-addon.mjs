// node scripts/smoke-addon.mjs <file.node>: loads one addon (a cross-built prebuilt binary) into the
// running Node.js and checks it against the protocol's hash vector, synchronously and on a libuv
// thread. Plain JavaScript with no dependency, so any Node.js of the binary's platform runs it:
// under qemu-user for arm64, with musl's loader for musl (scripts/README.md shows how).
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/smoke-addon.mjs <file.node>');
  process.exit(2);
}
const addon = createRequire(import.meta.url)(resolve(file));
// XXH3-64 of the tokens 1, 2, 3, 4 (little-endian u32) with seed 1337 (README, "Hash vectors").
const VECTOR = 14643705804678351452n;
const tokens = Uint32Array.of(1, 2, 3, 4);

const sync = new BigUint64Array(1);
addon.computeBlockHashesInto(tokens, 4, 1337n, null, null, sync);
const async = new BigUint64Array(1);
await addon.computeBlockHashesIntoAsync(tokens, 4, 1337n, null, null, async);
const hashes = new BigUint64Array(2);
const offsets = new Uint32Array(3);
await addon.computeBlockHashesBatchIntoAsync(Uint32Array.of(1, 2, 3, 4, 1, 2, 3, 4), Uint32Array.of(0, 4, 8), 4, 1337n, hashes, offsets, null);

const ok = sync[0] === VECTOR && async[0] === VECTOR && hashes[0] === VECTOR && hashes[1] === VECTOR && offsets.join() === '0,1,2';
const libc = /** @type {{ header: { glibcVersionRuntime?: string } }} */ (process.report.getReport()).header.glibcVersionRuntime;
console.log(
  `${ok ? 'ok' : 'WRONG'}: ${file} on Node ${process.version} ${process.platform}-${process.arch} (${libc ? `glibc ${libc}` : 'no glibc'}): ${sync[0]} ${async[0]} [${hashes}] [${offsets}]`,
);
process.exitCode = ok ? 0 : 1;
