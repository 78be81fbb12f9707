// The public API of `kvroute/events`.
import { KvIndexer } from 'kvroute';
import { describe, expectTypeOf, it } from 'vitest';
import * as events from 'kvroute/events';
import { EventIngest, decodeEventBatch, type DecodeResult, type WorkerIngestStats } from 'kvroute/events';

describe('kvroute/events', () => {
  it("keeps a KvIndexer in step with the engines' KV events", () => {
    const ingest = new EventIngest({ indexer: new KvIndexer({ blockSize: 16 }) });
    expectTypeOf(ingest.stats()).toEqualTypeOf<WorkerIngestStats[]>();
    expectTypeOf(decodeEventBatch).returns.toEqualTypeOf<DecodeResult>();
  });

  it('keeps its helpers internal', () => {
    expectTypeOf(events).not.toHaveProperty('isDeviceMedium');
  });
});
