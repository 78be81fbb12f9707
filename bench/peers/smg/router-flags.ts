// The node flags the suite's kvroute router process runs with: npm start's (src/cli/node-flags.ts)
// unless KVROUTE_BENCH_ROUTER_FLAGS names others, so a GC setting can be measured in the suite
// without a code edit per trial (`KVROUTE_BENCH_ROUTER_FLAGS='--max-semi-space-size=8
// --single-threaded-gc' npm run bench -- --peers --only smg-frontend`; an empty value runs node's
// defaults).
import { ROUTER_NODE_FLAGS } from '../../../src/cli/node-flags.js';

export const ROUTER_FLAGS_ENV = 'KVROUTE_BENCH_ROUTER_FLAGS';

/** One flag set as written on a command line: flags separated by white space, each `--name[=value]`. */
export function parseNodeFlags(text: string): string[] {
  const flags = text
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '');
  for (const f of flags) {
    if (!/^--[a-z0-9][a-z0-9_-]*(=\S+)?$/i.test(f)) throw new RangeError(`not a node flag: ${JSON.stringify(f)} (expected --name or --name=value)`);
  }
  return flags;
}

/** The router's node flags: KVROUTE_BENCH_ROUTER_FLAGS when set (even empty), npm start's otherwise. */
export function routerNodeFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = env[ROUTER_FLAGS_ENV];
  return given === undefined ? [...ROUTER_NODE_FLAGS] : parseNodeFlags(given);
}
