// An engine restarted behind a quiet subscriber: killed and started again on the same address, it
// publishes nothing the live feed could show (no request came), so only the probe after the
// reconnect can tell. The replay is asked from the last batch applied, which a restarted process
// does not hold (or holds under the same number with other bytes).
import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { EventIngest } from '../../src/events/ingest.js';
import type { IngestIncident } from '../../src/events/incidents.js';
import { TestEngine, caughtUp, closedAfterEach, range, storedEvent, waitFor, warmUp, workerStats } from './helpers.js';

const BS = 4;
const W = 3;
const { engines, ingests } = closedAfterEach();

const a = range(0, 8);
const storeA = storedEvent(a, BS, 100n, null);
const other = range(1000, 1012);
const storeOther = storedEvent(other, BS, 500n, null);

const blocksOf = (indexer: KvIndexer, tokens: Uint32Array) => indexer.findMatches(computeBlockHashes(tokens, BS)).find((m) => m.worker === W)?.blocks ?? 0;

async function setup(engineOpts: Parameters<typeof TestEngine.start>[0] = {}) {
  const engine = await TestEngine.start(engineOpts);
  engines.push(engine);
  const indexer = new KvIndexer({ blockSize: BS });
  const incidents: Array<IngestIncident['what']> = [];
  const ingest = new EventIngest({ indexer, replayTimeoutMs: 10_000, onIncident: (i) => incidents.push(i.what) });
  ingests.push(ingest);
  ingest.addWorker({
    worker: W,
    endpoints: [engine.endpoint],
    replayEndpoints: engine.replayEndpoint ? [engine.replayEndpoint] : undefined,
    topic: engine.topic,
    blockSize: BS,
  });
  await warmUp(engine, ingest, W);
  await engine.publish([storeA]);
  await caughtUp(engine, ingest, W);
  expect(blocksOf(indexer, a)).toBe(2);
  return { engine, indexer, ingest, incidents };
}

/** Swaps the engine for a restarted one (closed after the test). */
async function relaunch(engine: TestEngine): Promise<TestEngine> {
  engines.splice(engines.indexOf(engine), 1);
  const next = await engine.relaunch();
  engines.push(next);
  return next;
}

describe('EventSubscriber: an engine restarted on the same address', () => {
  it('with nothing published since: the reconnect probe finds nothing at the last batch and clears the worker', async () => {
    const { engine, indexer, ingest, incidents } = await setup();
    const last = engine.nextSeq - 1n;
    const restarted = await relaunch(engine);
    await waitFor(() => workerStats(ingest, W).restarts === 1, 'the restart to be seen');
    expect(blocksOf(indexer, a)).toBe(0);
    expect(incidents).toContainEqual({
      kind: 'restart',
      via: 'replay',
      seq: null,
      lastSeq: last,
      reason: `the replay buffer holds nothing from batch ${last} on`,
    });
    expect(restarted.replayRequests).toContain(last);
    // The new process's batches then apply from 0 on.
    await restarted.publish([storeOther]);
    await caughtUp(restarted, ingest, W);
    expect(blocksOf(indexer, other)).toBe(3);
    expect(workerStats(ingest, W).ranks[0].continuous).toBe(true);
  });

  it('having numbered past the old last batch unseen: another payload under that number is a restart, and its buffer rebuilds the worker', async () => {
    const { engine, indexer, ingest, incidents } = await setup();
    const last = engine.nextSeq - 1n;
    // Close first, then buffer the new process's batches before any subscriber can see them.
    engines.splice(engines.indexOf(engine), 1);
    await engine.close();
    const restarted = await TestEngine.start({ endpoints: { pub: engine.endpoint, replay: engine.replayEndpoint } });
    engines.push(restarted);
    for (let i = 0n; i <= last; i++) await restarted.publish([], { drop: true });
    await restarted.publish([storeOther], { drop: true });
    await waitFor(() => workerStats(ingest, W).restarts === 1, 'the restart to be seen');
    await caughtUp(restarted, ingest, W);
    expect(blocksOf(indexer, a)).toBe(0);
    expect(blocksOf(indexer, other)).toBe(3);
    expect(incidents).toContainEqual(
      expect.objectContaining({ kind: 'restart', via: 'replay', lastSeq: last, reason: `the replay buffer holds another batch ${last} than the one applied` }),
    );
  });

  it('the same process reconnected (a network blip) keeps its blocks: the probe finds the last batch as it was applied', async () => {
    const { engine, indexer, ingest, incidents } = await setup();
    const joins = workerStats(ingest, W).joins;
    await engine.rebindPublisher();
    await waitFor(() => workerStats(ingest, W).joins > joins, 'the reconnect probe');
    await ingest.idle();
    expect(blocksOf(indexer, a)).toBe(2);
    expect(workerStats(ingest, W)).toMatchObject({ restarts: 0, replayTooOld: 0 });
    expect(incidents.filter((i) => i.kind === 'restart' || i.kind === 'index_cleared')).toEqual([]);
    expect(workerStats(ingest, W).ranks[0].continuous).toBe(true);
  });

  it('without a replay service a reconnect cannot be proven: the worker is cleared', async () => {
    const { engine, indexer, ingest, incidents } = await setup({ replay: false });
    await relaunch(engine);
    await waitFor(() => blocksOf(indexer, a) === 0, 'the worker to be cleared');
    expect(incidents).toContainEqual({
      kind: 'index_cleared',
      reason: 'the event stream reconnected and there is no replay service to prove the engine did not restart',
    });
  });

  it('resync clears at once and rebuilds from the buffer of an engine that kept running', async () => {
    const { indexer, ingest } = await setup();
    expect(ingest.continuous(W)).toBe(true);
    expect(ingest.resync(W, 'the worker was unreachable')).toBe(true);
    expect(blocksOf(indexer, a)).toBe(0);
    expect(ingest.continuous(W)).toBe(false);
    await waitFor(() => ingest.continuous(W), 'the rebuild');
    await ingest.idle();
    expect(blocksOf(indexer, a)).toBe(2);
    expect(ingest.resync(404, 'x')).toBe(false);
    expect(ingest.continuous(404)).toBe(false);
  });
});

describe("vLLM's kv_cache_report_mode 'full'", () => {
  it('re-reports reused prefix blocks as BlockStored: applied as blocks already held, nothing refused', async () => {
    const { engine, indexer, ingest } = await setup();
    const before = workerStats(ingest, W);
    await engine.publish([storeA]); // the same blocks again, as a request that reused them reports them
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, a)).toBe(2);
    expect(workerStats(ingest, W).rejected).toEqual(before.rejected);
  });
});
