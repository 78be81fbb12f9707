// The kvroute router in a process of its own, as `kvroute serve` runs it: the compiled package
// (dist/, built by the suite's prepare with `npm run build:ts`), plain node with the flags npm
// start gives it, no TypeScript loader. Under tsx the router paid for its loader's output too
// (esbuild's keepNames wraps every closure in a __name() call that defines its name property):
// 35 us more router CPU per request in this suite (2026-11-28). Its CPU time per request is
// measured as SMG's is: the whole process's over a round. Started by kvroute-router.ts, over IPC.
import { parseRouterConfig, startServer } from '../../../dist/server/index.js';

const input = JSON.parse(process.env.KVROUTE_PEERS_ROUTER_CONFIG ?? '{}');
const started = await startServer({ config: parseRouterConfig(input) });
process.on('message', (m) => {
  if (m !== 'close') return;
  void started.close().finally(() => process.exit(0));
});
process.send?.({ url: started.server.url });
