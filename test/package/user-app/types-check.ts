// Compiled by install.test.ts with skipLibCheck off against the installed package: every subpath
// resolves to declarations that type-check, as a TypeScript user's project would see them.
import { KvIndexer, RoutingCore, computeBlockHashes, computeBlockHashesAsync, type RoutingDecision } from 'kvroute';
import { EventIngest } from 'kvroute/events';
import { HashPool, type BatchHashResult } from 'kvroute/hash-pool';
import { EngineClients, HttpTransport, KvRouter, PrefillRouter, WorkerPool } from 'kvroute/routing';
import { createRouter, fetchHandler, listenUws, nodeHandler, type Router } from 'kvroute/server';
import { runReplay, startSimWorker, type ReplayReport } from 'kvroute/sim';

export async function useEverything(): Promise<[RoutingDecision, BatchHashResult, ReplayReport | undefined]> {
  const hashes: BigUint64Array = computeBlockHashes(Uint32Array.of(1, 2, 3, 4), 4);
  const later: BigUint64Array = await computeBlockHashesAsync(Uint32Array.of(1, 2, 3, 4), 4);
  const indexer = new KvIndexer({ blockSize: 16 });
  indexer.findMatches(hashes.length > 0 ? hashes : later);
  const core = new RoutingCore(indexer, { blockSize: 16 });
  const decision = core.route(new Uint32Array(32), { requestId: 'r' });
  new EventIngest({ indexer });
  const pool = (name: string, roles: Array<'prefill' | 'decode' | 'aggregated'>) =>
    new KvRouter({ core, pool: new WorkerPool(name, core, roles), transport: new HttpTransport(new EngineClients()) });
  new PrefillRouter({ prefill: pool('prefill', ['prefill']), decode: pool('decode', ['decode', 'aggregated']) });
  const batch = await new HashPool().hashBatch(new Uint32Array(8), Uint32Array.of(0, 8), 4);
  const router: Router = await createRouter({ model: 'm' });
  await listenUws(router, { port: 0 });
  nodeHandler(router);
  fetchHandler(router);
  const worker = await startSimWorker({ id: 1 });
  await worker.close();
  return [decision, batch, typeof runReplay === 'function' ? undefined : undefined];
}
