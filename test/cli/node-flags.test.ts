import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTER_NODE_FLAGS, missingRouterFlags } from '../../src/cli/node-flags.js';

describe('router node flags', () => {
  it('are all missing from a plain process, and found on its command line or in NODE_OPTIONS', () => {
    expect(missingRouterFlags([], '')).toEqual([...ROUTER_NODE_FLAGS]);
    expect(missingRouterFlags([...ROUTER_NODE_FLAGS], '')).toEqual([]);
    expect(missingRouterFlags(['--import', 'tsx'], `--inspect ${ROUTER_NODE_FLAGS.join(' ')}`)).toEqual([]);
    // Another value of the same flag is the operator's choice: not reported as missing.
    expect(missingRouterFlags(['--max-semi-space-size=16'], '')).toEqual([]);
    expect(missingRouterFlags(['--max_semi_space_size=4'], '')).toEqual([]);
  });

  it('are what npm start runs the router with', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
    for (const flag of ROUTER_NODE_FLAGS) expect(pkg.scripts.start.split(' ')).toContain(flag);
  });
});
