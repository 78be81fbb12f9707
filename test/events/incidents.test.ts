// onIncident: what happened to a worker's event stream, reported as it happens (the server logs
// it; src/events logs nothing itself).
import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import type { IngestIncident } from '../../src/events/incidents.js';
import { EventIngest } from '../../src/events/ingest.js';
import { TestEngine, closedAfterEach, caughtUp, range, storedEvent, warmUp } from './helpers.js';

const BS = 4;
const W = 9;

const { engines, ingests } = closedAfterEach();

async function setup(engineOpts: Parameters<typeof TestEngine.start>[0] = {}) {
  const engine = await TestEngine.start(engineOpts);
  engines.push(engine);
  const incidents: IngestIncident[] = [];
  const ingest = new EventIngest({ indexer: new KvIndexer({ blockSize: BS }), replayTimeoutMs: 10_000, onIncident: (i) => incidents.push(i) });
  ingests.push(ingest);
  ingest.addWorker({
    worker: W,
    endpoints: [engine.endpoint],
    replayEndpoints: engine.replayEndpoint ? [engine.replayEndpoint] : undefined,
    topic: engine.topic,
    blockSize: BS,
  });
  await warmUp(engine, ingest, W);
  return { engine, ingest, incidents, after: incidents.length };
}

const storeA = storedEvent(range(0, 8), BS, 100n, null);
const storeB = storedEvent(range(8, 16), BS, 200n, 101n);
const storeC = storedEvent(range(16, 20), BS, 300n, 201n);

describe('EventIngest onIncident', () => {
  it('reports a gap and its repair from the replay', async () => {
    const { engine, ingest, incidents, after } = await setup();
    await engine.publish([storeA]);
    const dropped = await engine.publish([storeB], { drop: true });
    const live = await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    expect(incidents.slice(after)).toEqual([
      { worker: W, dpRank: 0, what: { kind: 'gap', from: dropped, to: live } },
      { worker: W, dpRank: 0, what: { kind: 'replayed', from: dropped, to: live } },
    ]);
  });

  it('reports a cleared index when the gap cannot be replayed', async () => {
    const { engine, ingest, incidents, after } = await setup({ replay: false });
    await engine.publish([storeA]);
    await engine.publish([storeB], { drop: true });
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    expect(incidents.slice(after).map((i) => i.what)).toEqual([
      expect.objectContaining({ kind: 'gap' }),
      { kind: 'index_cleared', reason: 'no replay endpoint to repair the gap' },
    ]);
  });

  it('reports an engine restart', async () => {
    const { engine, ingest, incidents, after } = await setup();
    const last = await engine.publish([storeA]);
    await caughtUp(engine, ingest, W);
    engine.restart();
    const first = await engine.publish([storedEvent(range(60, 64), BS, 100n, null)]);
    await caughtUp(engine, ingest, W);
    expect(incidents.slice(after)[0]).toEqual({ worker: W, dpRank: 0, what: { kind: 'restart', via: 'sequence', seq: first, lastSeq: last } });
  });

  it('refuses an onIncident that is not a function', () => {
    expect(() => new EventIngest({ indexer: new KvIndexer({ blockSize: BS }), onIncident: 'log' as never })).toThrow(TypeError);
  });
});
