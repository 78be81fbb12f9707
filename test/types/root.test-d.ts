// The public API of `kvroute` (the root), as a user's TypeScript sees it.
import { describe, expectTypeOf, it } from 'vitest';
import * as kvroute from 'kvroute';
import {
  type BackpressureError,
  KvIndexer,
  POLICY_NAMES,
  RoutingCore,
  type RoutingError,
  computeBlockHashes,
  computeBlockHashesAsync,
  computeBlockHashesBatch,
  computeBlockHashesBatchAsync,
  computeSequenceHashes,
  type BatchHashes,
  type HashOptions,
  type OverlapMatch,
  type PolicyName,
  type RoutingDecision,
} from 'kvroute';

describe('kvroute', () => {
  it('hashes synchronously and asynchronously with the same arguments and results', () => {
    expectTypeOf(computeBlockHashes).parameters.toEqualTypeOf<[tokens: Uint32Array, blockSize: number, opts?: HashOptions]>();
    expectTypeOf(computeBlockHashes).returns.toEqualTypeOf<BigUint64Array>();
    expectTypeOf(computeBlockHashesAsync).parameters.toEqualTypeOf<Parameters<typeof computeBlockHashes>>();
    expectTypeOf(computeBlockHashesAsync).returns.toEqualTypeOf<Promise<BigUint64Array>>();
    expectTypeOf(computeBlockHashesBatchAsync).parameters.toEqualTypeOf<Parameters<typeof computeBlockHashesBatch>>();
    expectTypeOf(computeBlockHashesBatch).returns.toEqualTypeOf<BatchHashes>();
    expectTypeOf(computeBlockHashesBatchAsync).returns.toEqualTypeOf<Promise<BatchHashes>>();
    expectTypeOf(computeSequenceHashes).toEqualTypeOf<(blockHashes: BigUint64Array) => BigUint64Array>();
    expectTypeOf<HashOptions['mmHashes']>().toEqualTypeOf<ReadonlyArray<ReadonlyArray<bigint | string> | null | undefined> | undefined>();
  });

  it('indexes and routes', () => {
    const indexer = new KvIndexer({ blockSize: 16 });
    expectTypeOf(indexer.findMatches(new BigUint64Array(1))).toEqualTypeOf<OverlapMatch[]>();
    expectTypeOf(indexer.findMatchesInto(new BigUint64Array(1), new Float64Array(3))).toEqualTypeOf<number>();
    expectTypeOf(KvIndexer.restore).returns.toEqualTypeOf<KvIndexer>();
    const core = new RoutingCore(indexer, { blockSize: 16, policy: 'kv' });
    expectTypeOf(core.route(new Uint32Array(16), { requestId: 'r' })).toEqualTypeOf<RoutingDecision>();
    expectTypeOf(core.free).returns.toEqualTypeOf<boolean>();
    expectTypeOf(POLICY_NAMES).toEqualTypeOf<readonly ['kv', 'round_robin', 'random', 'least_loaded', 'direct', 'ttft']>();
    expectTypeOf<PolicyName>().toEqualTypeOf<'kv' | 'round_robin' | 'random' | 'least_loaded' | 'direct' | 'ttft'>();
    expectTypeOf<BackpressureError>().toExtend<RoutingError>();
    expectTypeOf<BackpressureError['retryAfterMs']>().toEqualTypeOf<number>();
  });

  it('exports nothing from the server, routing, events, hash pool or simulator', () => {
    expectTypeOf(kvroute).not.toHaveProperty('HashPool');
    expectTypeOf(kvroute).not.toHaveProperty('createRouter');
    expectTypeOf(kvroute).not.toHaveProperty('listenUws');
    expectTypeOf(kvroute).not.toHaveProperty('nodeHandler');
    expectTypeOf(kvroute).not.toHaveProperty('KvRouter');
    expectTypeOf(kvroute).not.toHaveProperty('PrefillRouter');
    expectTypeOf(kvroute).not.toHaveProperty('EventIngest');
    expectTypeOf(kvroute).not.toHaveProperty('startSimWorker');
  });
});
