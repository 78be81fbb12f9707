// The public API of `kvroute/routing`: the orchestration classes and the engine clients.
import { describe, expectTypeOf, it } from 'vitest';
import * as routing from 'kvroute/routing';
import {
  type HttpTransport,
  type KvRouter,
  type PrefillRouter,
  type WorkerPool,
  parseRoutingHints,
  type LegRetry,
  type LegTransport,
  type OutlierDetectionOptions,
  type RoutedResponse,
  type RouterRequest,
  type RoutingHints,
  type SseEvent,
} from 'kvroute/routing';

describe('kvroute/routing', () => {
  it('routes a tokenized request to a response', () => {
    expectTypeOf<PrefillRouter['handle']>().toEqualTypeOf<(request: RouterRequest) => Promise<RoutedResponse>>();
    expectTypeOf<RoutedResponse['stream']>().toEqualTypeOf<AsyncIterable<SseEvent> | undefined>();
    expectTypeOf(parseRoutingHints).returns.toEqualTypeOf<RoutingHints>();
    expectTypeOf<ConstructorParameters<typeof KvRouter>[0]['transport']>().toEqualTypeOf<LegTransport>();
    expectTypeOf<HttpTransport>().toMatchTypeOf<LegTransport>();
  });

  it('fails a leg over and ejects failing workers when asked', () => {
    expectTypeOf<ConstructorParameters<typeof KvRouter>[0]['maxRetries']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Parameters<NonNullable<ConstructorParameters<typeof KvRouter>[0]['onRetry']>>[0]>().toEqualTypeOf<LegRetry>();
    expectTypeOf<NonNullable<ConstructorParameters<typeof WorkerPool>[3]>['outlierDetection']>().toEqualTypeOf<OutlierDetectionOptions | undefined>();
    expectTypeOf<WorkerPool['recordOutcome']>().parameter(1).toEqualTypeOf<'answered' | 'connect_failure' | 'server_error'>();
  });

  it('does not export what the routers keep their invariants with', () => {
    expectTypeOf(routing).not.toHaveProperty('BookingGuard');
    expectTypeOf(routing).not.toHaveProperty('GuardedStream');
    expectTypeOf(routing).not.toHaveProperty('RequestTracker');
    expectTypeOf(routing).not.toHaveProperty('roomForRank');
    expectTypeOf(routing).not.toHaveProperty('bootstrapRoom');
    expectTypeOf(routing).not.toHaveProperty('handoffFor');
    expectTypeOf(routing).not.toHaveProperty('SseParser');
    expectTypeOf(routing).not.toHaveProperty('validateWorkerInfo');
  });
});
