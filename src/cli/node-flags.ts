// V8 flags the router's process should run with. `npm start` passes them; a deployment sets them
// with NODE_OPTIONS (kvroute serve says so when they are missing).
//
// --max-semi-space-size=8 (MB; Node 20's default lets the young generation grow to 16 MB): the
// router's own heap is small (the KV index lives in Rust), and once a burst had grown the young
// generation to its largest, V8 kept the old generation's headroom below the young generation's
// size and ran a full mark-compact every ~400 ms (5-10 ms pauses) at 1,000 req/s with 8k-token
// prompts: overhead p99 13.3 ms, 27 full GCs in the rounds, against 1.2 ms and none with the flag
// (frontend bench, same machine, 2026-11-25).
export const ROUTER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

/** The router flags this process was started without (from its command line or NODE_OPTIONS). */
export function missingRouterFlags(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map((f) => f.split('=')[0].replace(/_/g, '-')));
  return ROUTER_NODE_FLAGS.filter((flag) => !given.has(flag.split('=')[0]));
}
