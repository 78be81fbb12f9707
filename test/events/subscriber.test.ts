import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { EventIngest } from '../../src/events/ingest.js';
import { TestEngine, closedAfterEach, caughtUp, range, seqFrame, storedEvent, waitFor, warmUp, workerStats } from './helpers.js';

const BS = 4;
const W = 7;
const matches = (indexer: KvIndexer, tokens: Uint32Array) => indexer.findMatches(computeBlockHashes(tokens, BS));
const blocksOf = (indexer: KvIndexer, tokens: Uint32Array, worker = W, dpRank = 0) =>
  matches(indexer, tokens).find((m) => m.worker === worker && m.dpRank === dpRank)?.blocks ?? 0;

const { engines, ingests } = closedAfterEach();

async function setup(engineOpts: Parameters<typeof TestEngine.start>[0] = {}, ingestOpts: { replayTimeoutMs?: number; eventsPerSlice?: number } = {}) {
  const engine = await TestEngine.start(engineOpts);
  engines.push(engine);
  const indexer = new KvIndexer({ blockSize: BS });
  const ingest = new EventIngest({ indexer, replayTimeoutMs: 10_000, ...ingestOpts });
  ingests.push(ingest);
  ingest.addWorker({
    worker: W,
    endpoints: [engine.endpoint],
    replayEndpoints: engine.replayEndpoint ? [engine.replayEndpoint] : undefined,
    topic: engine.topic,
    blockSize: BS,
  });
  const base = await warmUp(engine, ingest, W);
  return { engine, indexer, ingest, base };
}

// Three chained prompts: a (2 blocks), then b extends a by 2 blocks, then c extends b by 1.
const a = range(0, 8);
const ab = range(0, 16);
const abc = range(0, 20);
const storeA = storedEvent(a, BS, 100n, null);
const storeB = storedEvent(ab.subarray(8), BS, 200n, 101n);
const storeC = storedEvent(abc.subarray(16), BS, 300n, 201n);

describe('EventSubscriber: joining', () => {
  it('applies batches sent before the subscription took effect, with no later batch to show the gap', async () => {
    const engine = await TestEngine.start();
    engines.push(engine);
    // Published to nobody (ZeroMQ's slow joiner drops them the same way), then the engine idles.
    await engine.publish([storeA]);
    await engine.publish([storeB]);
    const indexer = new KvIndexer({ blockSize: BS });
    const incidents: unknown[] = [];
    const ingest = new EventIngest({ indexer, onIncident: (i) => incidents.push(i.what) });
    ingests.push(ingest);
    ingest.addWorker({ worker: W, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: engine.topic, blockSize: BS });
    await ingest.joined(W);
    await ingest.idle();
    expect(blocksOf(indexer, ab)).toBe(4);
    expect(engine.replayRequests).toEqual([0n]);
    expect(incidents).toEqual([{ kind: 'joined', from: 0n, to: 1n }]);
    const s = workerStats(ingest, W);
    expect(s).toMatchObject({ joins: 1, gaps: 0, replays: 0, replayedBatches: 2, replayFailures: 0 });
    // The live feed then follows on from the probe.
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, abc)).toBe(5);
  });

  it('joins an engine whose buffer no longer reaches its first batch without calling it lost history', async () => {
    const engine = await TestEngine.start({ bufferSize: 1 });
    engines.push(engine);
    await engine.publish([storeA]);
    await engine.publish([storeB]);
    const indexer = new KvIndexer({ blockSize: BS });
    const incidents: Array<{ kind: string }> = [];
    const ingest = new EventIngest({ indexer, onIncident: (i) => incidents.push(i.what) });
    ingests.push(ingest);
    ingest.addWorker({ worker: W, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: engine.topic, blockSize: BS });
    await ingest.joined(W);
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    // storeB's parent (storeA) aged out of the buffer: it is refused, then storeC after it.
    expect(blocksOf(indexer, abc)).toBe(0);
    expect(incidents.map((i) => i.kind)).toEqual(['joined']);
    expect(workerStats(ingest, W)).toMatchObject({ replayTooOld: 0, replayedBatches: 1, ranks: [{ lastSeq: 2n }] });
  });

  it('joins at the handshake when the engine has no replay service, and keeps nothing from before', async () => {
    const engine = await TestEngine.start({ replay: false });
    engines.push(engine);
    await engine.publish([storeA]);
    const indexer = new KvIndexer({ blockSize: BS });
    const ingest = new EventIngest({ indexer });
    ingests.push(ingest);
    ingest.addWorker({ worker: W, endpoints: [engine.endpoint], topic: engine.topic, blockSize: BS });
    await ingest.joined(W);
    expect(workerStats(ingest, W).joins).toBe(1);
    expect(blocksOf(indexer, a)).toBe(0);
  });

  it('a probe that fails loses nothing: the live feed goes on', async () => {
    const { engine, indexer, ingest, base } = await setup({ replay: 'silent' }, { replayTimeoutMs: 200 });
    expect(base.replayFailures).toBe(1);
    await engine.publish([storeA]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, a)).toBe(2);
  });
});

describe('EventSubscriber: sequence gaps', () => {
  it('replays a gap from the engine and applies the missing batch', async () => {
    const { engine, indexer, ingest, base } = await setup();
    await engine.publish([storeA]);
    const dropped = await engine.publish([storeB], { drop: true });
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    // storeC's parent is in the dropped batch: only the replay can make it acceptable.
    expect(blocksOf(indexer, abc)).toBe(5);
    // Asked from the last batch applied (the anchor that proves the engine did not restart).
    expect(engine.replayRequests).toContain(dropped - 1n);
    const s = workerStats(ingest, W);
    expect(s.gaps - base.gaps).toBe(1);
    expect(s.replays - base.replays).toBe(1);
    expect(s.replayedBatches - base.replayedBatches).toBeGreaterThanOrEqual(1);
    expect(s.replayFailures - base.replayFailures).toBe(0);
    expect(s.rejected).toEqual(base.rejected);
  });

  it('reads replies in the newer [topic, seq, payload] form too', async () => {
    const { engine, indexer, ingest } = await setup({ replyFormat: 'newer', encoding: 'array' });
    await engine.publish([storeA]);
    await engine.publish([storeB], { drop: true });
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, abc)).toBe(5);
  });

  it('skips live batches that a replay already applied', async () => {
    const { engine, indexer, ingest, base } = await setup();
    await engine.publish([storeA], { drop: true });
    // The replay (asked when storeB arrives) returns storeA, storeB and storeC; storeC then also
    // arrives live and must not look like a restart.
    await engine.publish([storeB]);
    await engine.publish([storeC]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, abc)).toBe(5);
    const s = workerStats(ingest, W);
    expect(s.restarts - base.restarts).toBe(0);
    expect(s.rejected).toEqual(base.rejected);
  });

  it('clears and rebuilds when the gap is older than the engine buffer', async () => {
    const { engine, indexer, ingest, base } = await setup({ bufferSize: 2 });
    await engine.publish([storeA]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, a)).toBe(2);
    // Lost: the removal of A (the index would keep it forever) and two more batches; the
    // engine's buffer of 2 no longer holds the start of the gap.
    await engine.publish([{ type: 'BlockRemoved', blockHashes: [100n, 101n], medium: 'GPU' }], { drop: true });
    const d = range(50, 58);
    await engine.publish([storedEvent(d, BS, 500n, null)], { drop: true });
    const e = range(70, 74);
    await engine.publish([storedEvent(e, BS, 600n, null)], { drop: true });
    const f = range(90, 94);
    await engine.publish([storedEvent(f, BS, 700n, null)]);
    await caughtUp(engine, ingest, W);
    const s = workerStats(ingest, W);
    expect(s.replayTooOld - base.replayTooOld).toBe(1);
    expect(blocksOf(indexer, a)).toBe(0); // cleared
    expect(blocksOf(indexer, d)).toBe(0); // no longer buffered: unknown
    expect(blocksOf(indexer, e)).toBe(1); // still buffered: rebuilt from the replay
    expect(blocksOf(indexer, f)).toBe(1); // live
    // The stream goes on normally afterwards.
    await engine.publish([storedEvent(range(110, 114), BS, 800n, null)]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, range(110, 114))).toBe(1);
    expect(workerStats(ingest, W).gaps - base.gaps).toBe(1);
  });

  it('clears the worker when a gap cannot be replayed (no replay endpoint)', async () => {
    const { engine, indexer, ingest, base } = await setup({ replay: false });
    await engine.publish([storeA]);
    await engine.publish([storeB], { drop: true });
    const other = range(40, 44);
    await engine.publish([storedEvent(other, BS, 900n, null)]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, a)).toBe(0);
    expect(blocksOf(indexer, other)).toBe(1);
    const s = workerStats(ingest, W);
    expect(s.gaps - base.gaps).toBe(1);
    expect(s.replays - base.replays).toBe(0);
    expect(s.replayFailures - base.replayFailures).toBe(1);
  });

  it('clears the worker when the replay times out, and keeps ingesting', async () => {
    const { engine, indexer, ingest, base } = await setup({ replay: 'silent' }, { replayTimeoutMs: 300 });
    await engine.publish([storeA]);
    await engine.publish([storeB], { drop: true });
    const other = range(40, 44);
    await engine.publish([storedEvent(other, BS, 900n, null)]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, a)).toBe(0);
    expect(blocksOf(indexer, other)).toBe(1);
    const s = workerStats(ingest, W);
    expect(s.replays - base.replays).toBe(1);
    expect(s.replayFailures - base.replayFailures).toBe(1);
  });
});

describe('EventSubscriber: restarts and bad messages', () => {
  it('clears the worker when the engine restarts (sequence back to 0)', async () => {
    const { engine, indexer, ingest, base } = await setup();
    await engine.publish([storeA]);
    await engine.publish([storeB]);
    await caughtUp(engine, ingest, W);
    expect(blocksOf(indexer, ab)).toBe(4);
    engine.restart();
    const fresh = range(60, 64);
    await engine.publish([storedEvent(fresh, BS, 100n, null)]); // the new process reuses hash 100
    await caughtUp(engine, ingest, W);
    const s = workerStats(ingest, W);
    expect(s.restarts - base.restarts).toBe(1);
    expect(blocksOf(indexer, ab)).toBe(0);
    expect(blocksOf(indexer, fresh)).toBe(1);
    expect(s.ranks[0].lastSeq).toBe(0n);
  });

  it('counts undecodable messages and goes on with the next batches', async () => {
    const { engine, indexer, ingest, base } = await setup();
    await engine.publishPayload(Buffer.from('93c1', 'hex')); // truncated msgpack, valid frames
    await engine.sendRaw([Buffer.from(engine.topic), Buffer.from('0102', 'hex'), Buffer.from('90', 'hex')]); // short seq frame
    await engine.sendRaw([Buffer.from(engine.topic), seqFrame(1n)]); // 2 frames
    await engine.publish([storeA]);
    await caughtUp(engine, ingest, W);
    const s = workerStats(ingest, W);
    expect(s.decodeErrors - base.decodeErrors).toBe(3);
    expect(s.gaps - base.gaps).toBe(0);
    expect(blocksOf(indexer, a)).toBe(2);
  });

  it('yields to the event loop while draining a backlog', async () => {
    // A replay whose answer is held back keeps the apply loop waiting while 300 live batches pile
    // up in the subscriber's queue; the replay then finds nothing buffered (too old), and the
    // backlog is applied from memory. A ticker on setImmediate records which turn of the event
    // loop each batch is applied in: applying in slices of 16 events means many turns, one
    // synchronous block would mean a single one.
    const engine = await TestEngine.start();
    engines.push(engine);
    const indexer = new KvIndexer({ blockSize: BS });
    let ticks = 0;
    const turns = new Set<number>();
    const port = {
      blockSize: indexer.blockSize,
      applyEventBatch: (w: number, r: number, p: Uint8Array) => {
        turns.add(ticks);
        return indexer.applyEventBatch(w, r, p);
      },
      applyEventBatchAsync: (w: number, r: number, p: Uint8Array) => indexer.applyEventBatchAsync(w, r, p),
      applyCleared: (w: number, r: number) => indexer.applyCleared(w, r),
      removeWorker: (w: number) => indexer.removeWorker(w),
    };
    const ingest = new EventIngest({ indexer: port, replayTimeoutMs: 60_000, eventsPerSlice: 16 });
    ingests.push(ingest);
    ingest.addWorker({ worker: W, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: engine.topic });
    await warmUp(engine, ingest, W);
    let release = () => {};
    engine.hold = new Promise<void>((r) => (release = r));

    await engine.publish([], { drop: true });
    const batches = 300;
    for (let i = 0; i < batches; i++) {
      const t = range(1000 + i * 16, 1000 + i * 16 + 16);
      await engine.publish([0, 1, 2, 3].map((j) => storedEvent(t.subarray(j * 4, j * 4 + 4), BS, BigInt(10_000 + i * 4 + j), null)));
    }
    await waitFor(() => workerStats(ingest, W).ranks[0].queued >= batches - 1, 'the backlog to queue up');
    engine.forgetBuffer();
    let running = true;
    const tick = () => {
      ticks++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    turns.clear();
    release();
    await caughtUp(engine, ingest, W);
    running = false;
    expect(workerStats(ingest, W).replayTooOld).toBeGreaterThanOrEqual(1);
    expect(indexer.findMatches(computeBlockHashes(range(1000 + 299 * 16, 1000 + 300 * 16), BS))).toEqual([{ worker: W, dpRank: 0, blocks: 1 }]);
    // 1,200 events in slices of 16: dozens of turns (at least one per 16 events minus slack).
    expect(turns.size).toBeGreaterThan(30);
  });

  it('stops applying once the worker is removed', async () => {
    const { engine, indexer, ingest } = await setup();
    // A second worker on the same publisher: it shows that later batches were sent and applied.
    const witness = W + 1;
    ingest.addWorker({ worker: witness, endpoints: [engine.endpoint], replayEndpoints: [engine.replayEndpoint!], topic: engine.topic, blockSize: BS });
    await warmUp(engine, ingest, witness);
    await engine.publish([storeA]);
    await caughtUp(engine, ingest, W);
    await caughtUp(engine, ingest, witness);
    expect(blocksOf(indexer, a)).toBe(2);

    const disconnects = engine.disconnects;
    expect(ingest.removeWorker(W)).toBe(true);
    expect(blocksOf(indexer, a)).toBe(0);
    expect(blocksOf(indexer, a, witness)).toBe(2);
    // The removed worker's subscription is closed: the publisher sees its connection go.
    await waitFor(() => engine.disconnects > disconnects, 'the removed subscription to disconnect');
    await engine.publish([storedEvent(range(200, 204), BS, 1n, null)]);
    await caughtUp(engine, ingest, witness);
    expect(blocksOf(indexer, range(200, 204), witness)).toBe(1);
    expect(matches(indexer, range(200, 204))).toEqual([{ worker: witness, dpRank: 0, blocks: 1 }]);
    expect(ingest.stats().map((s) => s.worker)).toEqual([witness]);
    expect(ingest.removeWorker(W)).toBe(false);
  });
});

describe('EventSubscriber: several publishers', () => {
  it('keeps dp ranks and workers apart, each with its own counters', async () => {
    const rank0 = await TestEngine.start();
    const rank1 = await TestEngine.start({ dpRank: 1 });
    const other = await TestEngine.start();
    engines.push(rank0, rank1, other);
    const indexer = new KvIndexer({ blockSize: BS });
    const ingest = new EventIngest({ indexer });
    ingests.push(ingest);
    ingest.addWorker({
      worker: 1,
      endpoints: [rank0.endpoint, rank1.endpoint],
      replayEndpoints: [rank0.replayEndpoint!, rank1.replayEndpoint!],
      topic: 'kv-events',
    });
    ingest.addWorker({ worker: 2, endpoints: [other.endpoint], replayEndpoints: [other.replayEndpoint!] });
    // Both ranks must be live: warm up rank 1 through its own probes.
    await warmUp(rank0, ingest, 1);
    await waitFor(() => workerStats(ingest, 1).ranks[1].lastSeq !== null || (void rank1.publish([]), false), 'rank 1 to receive');
    await caughtUp(rank1, ingest, 1, 1);
    await warmUp(other, ingest, 2);
    const base1 = workerStats(ingest, 1);
    const base2 = workerStats(ingest, 2);

    await rank0.publish([storeA]);
    await rank1.publish([storeA, storeB]);
    await other.publish([storedEvent(a, BS, 5n, null, { medium: 'CPU' })]);
    await other.publish([storedEvent(a, 2, 5n, null)]);
    await caughtUp(rank0, ingest, 1, 0);
    await caughtUp(rank1, ingest, 1, 1);
    await caughtUp(other, ingest, 2);
    expect(matches(indexer, ab)).toEqual([
      { worker: 1, dpRank: 1, blocks: 4 },
      { worker: 1, dpRank: 0, blocks: 2 },
    ]);
    const s1 = workerStats(ingest, 1);
    const s2 = workerStats(ingest, 2);
    expect(s1.applied - base1.applied).toBe(3);
    expect(s1.batches - base1.batches).toBe(2);
    expect(s1.ranks.map((r) => r.dpRank)).toEqual([0, 1]);
    expect(s2.applied - base2.applied).toBe(1);
    expect(s2.lowerTierEvents - base2.lowerTierEvents).toBe(1);
    expect(s2.ignoredMedium - base2.ignoredMedium).toBe(0);
    expect((s2.rejected.blockSize ?? 0) - (base2.rejected.blockSize ?? 0)).toBe(1);
  });
});
