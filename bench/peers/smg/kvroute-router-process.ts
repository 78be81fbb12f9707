// The kvroute router in a process of its own, as `kvroute serve` runs it (startServer, the flags
// npm start gives it), so that its CPU time per request is measured as SMG's is: the whole
// process's over a round. Started by kvroute-router.ts, over IPC.
import { parseRouterConfig, startServer } from '../../../src/server/index.js';

const input = JSON.parse(process.env.KVROUTE_PEERS_ROUTER_CONFIG ?? '{}') as object;
const started = await startServer({ config: parseRouterConfig(input) });
process.on('message', (m) => {
  if (m !== 'close') return;
  void started.close().finally(() => process.exit(0));
});
process.send!({ url: started.server.url });
