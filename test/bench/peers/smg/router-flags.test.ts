import { describe, expect, it } from 'vitest';
import { parseNodeFlags, ROUTER_FLAGS_ENV, routerNodeFlags } from '../../../../bench/peers/smg/router-flags.js';
import { ROUTER_NODE_FLAGS } from '../../../../src/cli/node-flags.js';

describe("the smg-frontend router's node flags", () => {
  it("are npm start's unless KVROUTE_BENCH_ROUTER_FLAGS names others; empty means none", () => {
    expect(routerNodeFlags({})).toEqual([...ROUTER_NODE_FLAGS]);
    expect(routerNodeFlags({ [ROUTER_FLAGS_ENV]: '  --max-semi-space-size=8   --single-threaded-gc ' })).toEqual([
      '--max-semi-space-size=8',
      '--single-threaded-gc',
    ]);
    expect(routerNodeFlags({ [ROUTER_FLAGS_ENV]: '' })).toEqual([]);
    expect(routerNodeFlags({ [ROUTER_FLAGS_ENV]: '--no_minor_gc_task' })).toEqual(['--no_minor_gc_task']);
  });

  it('refuse anything that is not a --flag or --flag=value', () => {
    for (const bad of ['single-threaded-gc', '--max-semi-space-size=8 -e', '--', '--x= ', '--flag;rm']) {
      expect(() => parseNodeFlags(bad), bad).toThrow(RangeError);
    }
    expect(() => routerNodeFlags({ [ROUTER_FLAGS_ENV]: 'dist/cli.js' })).toThrow(/not a node flag: "dist\/cli.js"/);
  });
});
