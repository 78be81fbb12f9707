import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { EventIngest, endpointForRank, endpointsPerRank } from '../../src/events/ingest.js';
import { TestEngine, closedAfterEach, caughtUp, range, storedEvent, warmUp, workerStats } from './helpers.js';

const BS = 4;

const { engines, ingests } = closedAfterEach();

function newIngest(opts: Partial<ConstructorParameters<typeof EventIngest>[0]> = {}) {
  const indexer = new KvIndexer({ blockSize: BS });
  const ingest = new EventIngest({ indexer, ...opts });
  ingests.push(ingest);
  return { indexer, ingest };
}

describe('EventIngest: events reach the index', () => {
  it.each(['map', 'array'] as const)('applies %s-encoded batches so that findMatches sees them', async (encoding) => {
    const engine = await TestEngine.start({ encoding, topic: 'kv@engine-1' });
    engines.push(engine);
    const { indexer, ingest } = newIngest();
    ingest.addWorker({ worker: 11, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: 'kv@', blockSize: BS });
    const base = await warmUp(engine, ingest, 11);

    const prompt = range(0, 12);
    await engine.publish([storedEvent(prompt.subarray(0, 8), BS, 2n ** 64n - 10n, null)]);
    await engine.publish([storedEvent(prompt.subarray(8), BS, 77n, 2n ** 64n - 9n, { loraName: null })]);
    await caughtUp(engine, ingest, 11);
    expect(indexer.findMatches(computeBlockHashes(prompt, BS))).toEqual([{ worker: 11, dpRank: 0, blocks: 3 }]);

    await engine.publish([{ type: 'BlockRemoved', blockHashes: [77n], medium: 'GPU' }]);
    await caughtUp(engine, ingest, 11);
    expect(indexer.findMatches(computeBlockHashes(prompt, BS))).toEqual([{ worker: 11, dpRank: 0, blocks: 2 }]);

    await engine.publish([{ type: 'AllBlocksCleared' }]);
    await caughtUp(engine, ingest, 11);
    expect(indexer.findMatches(computeBlockHashes(prompt, BS))).toEqual([]);

    const s = workerStats(ingest, 11);
    expect(s.applied - base.applied).toBe(4);
    expect(s.batches - base.batches).toBe(4);
    expect(s.rejected).toEqual(base.rejected);
    expect(s.ranks).toEqual([
      {
        dpRank: 0,
        endpoint: engine.endpoint,
        replayEndpoint: engine.replayEndpoint,
        lastSeq: engine.nextSeq - 1n,
        queued: 0,
        replaying: false,
        continuous: true,
        blockSizeMismatch: null,
      },
    ]);
  });

  it('receives only the subscribed topic prefix', async () => {
    const engine = await TestEngine.start({ topic: 'kv-events' });
    engines.push(engine);
    const { ingest } = newIngest();
    ingest.addWorker({ worker: 1, endpoints: [engine.endpoint], topic: 'kv-events' });
    // Messages on another topic, interleaved with the worker's own: undecodable and numbered 0,
    // they would count as decode errors and restarts if the subscription let them through.
    const foreign = () => engine.sendRaw([Buffer.from('kv-other'), Buffer.alloc(8), Buffer.from('c1', 'hex')]);
    await foreign();
    const base = await warmUp(engine, ingest, 1);
    for (let i = 0; i < 10; i++) {
      await foreign();
      await engine.publish([]);
    }
    await caughtUp(engine, ingest, 1);
    const s = workerStats(ingest, 1);
    expect(s.batches - base.batches).toBe(10);
    expect(s.decodeErrors).toBe(0);
    expect(s.restarts).toBe(0);
  });

  it('reports zeroed counters for a new worker, in the shape the metrics read', () => {
    const { ingest } = newIngest();
    ingest.addWorker({ worker: 5, endpoints: ['tcp://127.0.0.1:1', 'tcp://127.0.0.1:2'] });
    expect(ingest.hasWorker(5)).toBe(true);
    const [s] = ingest.stats();
    expect(s).toMatchObject({ worker: 5, batches: 0, applied: 0, rejected: {}, gaps: 0, replays: 0, decodeErrors: 0, restarts: 0, unknownEventTypes: 0 });
    expect(s.ranks.map((r) => [r.dpRank, r.endpoint, r.replayEndpoint, r.lastSeq])).toEqual([
      [0, 'tcp://127.0.0.1:1', null, null],
      [1, 'tcp://127.0.0.1:2', null, null],
    ]);
  });
});

describe('EventIngest: configuration errors', () => {
  it('refuses a missing or approximate-mode indexer and bad options', () => {
    expect(() => new EventIngest(undefined as never)).toThrow(TypeError);
    expect(() => new EventIngest({ indexer: {} as never })).toThrow(/KvIndexer/);
    const approx = new KvIndexer({ blockSize: BS, mode: 'approximate' });
    expect(() => new EventIngest({ indexer: approx })).toThrow(/'events' mode/);
    const indexer = new KvIndexer({ blockSize: BS });
    expect(() => new EventIngest({ indexer, replayTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => new EventIngest({ indexer, queueLimit: 1.5 })).toThrow(RangeError);
    expect(() => new EventIngest({ indexer, eventsPerSlice: '8' as never })).toThrow(TypeError);
    expect(() => new EventIngest({ indexer, onError: 3 as never })).toThrow(TypeError);
  });

  it('refuses bad worker specs with a clear TypeError or RangeError', () => {
    const { ingest } = newIngest();
    const ok = { worker: 1, endpoints: ['tcp://127.0.0.1:5557'] };
    expect(() => ingest.addWorker(null as never)).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...ok, worker: -1 })).toThrow(RangeError);
    expect(() => ingest.addWorker({ ...ok, worker: 2 ** 53 })).toThrow(RangeError);
    expect(() => ingest.addWorker({ ...ok, worker: '1' as never })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...ok, endpoints: 'tcp://127.0.0.1:5557' as never })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...ok, endpoints: [] })).toThrow(/at least one/);
    expect(() => ingest.addWorker({ ...ok, endpoints: [5557 as never] })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...ok, endpoints: ['127.0.0.1:5557'] })).toThrow(/tcp:\/\/host:port/);
    expect(() => ingest.addWorker({ ...ok, dpSize: 0 })).toThrow(RangeError);
    expect(() => ingest.addWorker({ ...ok, endpoints: ['tcp://a:1', 'tcp://a:2'], dpSize: 3 })).toThrow(/2 endpoints for 3 dp ranks/);
    expect(() => ingest.addWorker({ ...ok, replayEndpoints: ['tcp://a:1', 'tcp://a:2'] })).toThrow(/2 endpoints for 1 dp ranks/);
    expect(() => ingest.addWorker({ ...ok, topic: 7 as never })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...ok, blockSize: 16 })).toThrow(/block size 16 but the index uses 4/);
    expect(() => ingest.addWorker({ ...ok, blockSize: 0 })).toThrow(/spec.blockSize must be an integer in \[1, /);
    expect(() => ingest.addWorker({ ...ok, blockSize: '4' as never })).toThrow(TypeError);
    expect(ingest.stats()).toEqual([]);
    ingest.addWorker(ok);
    expect(() => ingest.addWorker(ok)).toThrow(/already subscribed/);
    expect(() => ingest.removeWorker(-3)).toThrow(RangeError);
  });

  it('expands one endpoint to port + rank with dpSize (vLLM data parallelism)', () => {
    const { ingest } = newIngest();
    ingest.addWorker({ worker: 1, endpoints: ['tcp://10.0.0.1:5557'], replayEndpoints: ['tcp://10.0.0.1:5600'], dpSize: 3 });
    expect(ingest.stats()[0].ranks.map((r) => [r.endpoint, r.replayEndpoint])).toEqual([
      ['tcp://10.0.0.1:5557', 'tcp://10.0.0.1:5600'],
      ['tcp://10.0.0.1:5558', 'tcp://10.0.0.1:5601'],
      ['tcp://10.0.0.1:5559', 'tcp://10.0.0.1:5602'],
    ]);
    expect(endpointsPerRank(['tcp://a:1', 'tcp://b:9'], 'e', 2)).toEqual(['tcp://a:1', 'tcp://b:9']);
    expect(endpointForRank('tcp://[::1]:7000', 2)).toBe('tcp://[::1]:7002');
    expect(() => endpointForRank('ipc:///tmp/kv', 1)).toThrow(/only a tcp/);
    expect(() => endpointForRank('tcp://h:65535', 1)).toThrow(/exceeds 65535/);
  });

  it('refuses new workers once closed', async () => {
    const { ingest } = newIngest();
    await ingest.close();
    expect(() => ingest.addWorker({ worker: 1, endpoints: ['tcp://127.0.0.1:5557'] })).toThrow(/closed/);
  });
});

describe('EventIngest: a restored index resumes where its snapshot ended (resumeAfter)', () => {
  /** An index fed live up to `engine`'s last batch, snapshotted, and its last sequence number. */
  async function snapshotAfter(engine: TestEngine): Promise<{ bytes: Uint8Array; lastSeq: bigint }> {
    const { indexer, ingest } = newIngest();
    ingest.addWorker({ worker: 5, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: engine.topic, blockSize: BS });
    await warmUp(engine, ingest, 5);
    await engine.publish([storedEvent(range(0, 8), BS, 100n, null)]);
    await caughtUp(engine, ingest, 5);
    const lastSeq = workerStats(ingest, 5).ranks[0].lastSeq!;
    return { bytes: indexer.snapshot(), lastSeq };
  }

  it('replays what came after the snapshot at once, keeping the restored blocks, then follows the live feed', async () => {
    const engine = await TestEngine.start();
    engines.push(engine);
    const { bytes, lastSeq } = await snapshotAfter(engine);
    // Published while no subscriber of the restored index listened: only the replay has them.
    await engine.publish([storedEvent(range(8, 16), BS, 102n, 101n)], { drop: true });
    const indexer = KvIndexer.restore(bytes);
    const incidents: unknown[] = [];
    const ingest = new EventIngest({ indexer, onIncident: (i) => incidents.push(i.what) });
    ingests.push(ingest);
    ingest.addWorker({
      worker: 5,
      endpoints: [engine.endpoint],
      replayEndpoints: [engine.replayEndpoint!],
      topic: engine.topic,
      blockSize: BS,
      resumeAfter: [lastSeq],
    });
    // caughtUp settles once the replay is applied (what a replica's warm start waits for).
    await ingest.caughtUp(5);
    expect(indexer.findMatches(computeBlockHashes(range(0, 16), BS))).toEqual([{ worker: 5, dpRank: 0, blocks: 4 }]);
    await ingest.caughtUp(404);
    await ingest.joined(5);
    await ingest.idle();
    // The catch-up's request first, then the join probe's (which finds nothing newer); each asks from
    // the last batch it holds, which must come back (a restarted engine would not have it).
    expect(engine.replayRequests.slice(-2)).toEqual([lastSeq, lastSeq + 1n]);
    expect(indexer.findMatches(computeBlockHashes(range(0, 16), BS))).toEqual([{ worker: 5, dpRank: 0, blocks: 4 }]);
    expect(incidents).toEqual([{ kind: 'caught_up', from: lastSeq + 1n, to: lastSeq + 1n }]);
    // The live feed goes on from there: no gap, no clearing.
    await engine.publish([storedEvent(range(16, 20), BS, 104n, 103n)]);
    await caughtUp(engine, ingest, 5);
    expect(indexer.findMatches(computeBlockHashes(range(0, 20), BS))).toEqual([{ worker: 5, dpRank: 0, blocks: 5 }]);
    expect(incidents).toHaveLength(1);
    expect(workerStats(ingest, 5).gaps).toBe(0);
  });

  it('clears the restored blocks when the engine no longer buffers what the snapshot lacks', async () => {
    const engine = await TestEngine.start({ bufferSize: 1 });
    engines.push(engine);
    const { bytes, lastSeq } = await snapshotAfter(engine);
    await engine.publish([{ type: 'BlockRemoved', blockHashes: [101n], medium: 'GPU' }], { drop: true });
    await engine.publish([storedEvent(range(40, 44), BS, 300n, null)], { drop: true });
    const indexer = KvIndexer.restore(bytes);
    const incidents: Array<{ kind: string }> = [];
    const ingest = new EventIngest({ indexer, onIncident: (i) => incidents.push(i.what) });
    ingests.push(ingest);
    ingest.addWorker({
      worker: 5,
      endpoints: [engine.endpoint],
      replayEndpoints: [engine.replayEndpoint!],
      topic: engine.topic,
      blockSize: BS,
      resumeAfter: [lastSeq],
    });
    await ingest.idle();
    expect(incidents.map((i) => i.kind)).toEqual(['index_cleared', 'caught_up']);
    // Rebuilt from what the buffer held: the removal it missed cannot leave a stale block behind.
    expect(indexer.findMatches(computeBlockHashes(range(0, 8), BS))).toEqual([]);
    expect(indexer.findMatches(computeBlockHashes(range(40, 44), BS))).toEqual([{ worker: 5, dpRank: 0, blocks: 1 }]);
  });

  it('refuses a resumeAfter that is not per-rank bigints', () => {
    const { ingest } = newIngest();
    const spec = { worker: 1, endpoints: ['tcp://127.0.0.1:1'] };
    expect(() => ingest.addWorker({ ...spec, resumeAfter: [5 as never] })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...spec, resumeAfter: [-1n] })).toThrow(TypeError);
    expect(() => ingest.addWorker({ ...spec, resumeAfter: 'x' as never })).toThrow(TypeError);
    expect(ingest.hasWorker(1)).toBe(false);
  });
});
