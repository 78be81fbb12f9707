// The public API of `kvroute/sim`.
import { describe, expectTypeOf, it } from 'vitest';
import {
  loadTrace,
  runReplay,
  startSimFleet,
  startSimWorker,
  type ReplayConfig,
  type ReplayReport,
  type SimFleet,
  type SimWorker,
  type TraceRequest,
} from 'kvroute/sim';

describe('kvroute/sim', () => {
  it('starts simulated workers and fleets', () => {
    expectTypeOf(startSimWorker).returns.toEqualTypeOf<Promise<SimWorker>>();
    expectTypeOf(startSimFleet).returns.toEqualTypeOf<Promise<SimFleet>>();
    expectTypeOf<SimWorker['url']>().toEqualTypeOf<string>();
    expectTypeOf<SimWorker['faults']['failNext']>().toEqualTypeOf<(n: number) => void>();
  });

  it('replays traces', () => {
    expectTypeOf(runReplay).toEqualTypeOf<(cfg: ReplayConfig) => Promise<ReplayReport>>();
    expectTypeOf(loadTrace).returns.toEqualTypeOf<Promise<TraceRequest[]>>();
  });
});
