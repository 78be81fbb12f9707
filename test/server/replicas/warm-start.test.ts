// Warm start over a real nats-server: a replica started after another has indexed the engines'
// events restores the cluster's snapshot from the object store, replays what the engines published
// since from their replay buffers, and only then reports ready; a damaged or foreign snapshot is a
// cold start, said so in the log, never a crash.
import { connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as zmq from 'zeromq';
import { KvIndexer } from '../../../src/core/indexer.js';
import { encodeWarmSnapshot, type WarmSnapshot } from '../../../src/server/replicas/snapshot-format.js';
import { SnapshotStore } from '../../../src/server/replicas/snapshot-store.js';
import { captureLog } from '../../helpers/log-capture.js';
import { NATS_SKIP_REASON } from '../../helpers/nats.js';
import { BLOCK_SIZE, MODEL, metricSamples, prompt, waitFor } from '../helpers/router.js';
import { FAST, startReplicaCluster, type ReplicaCluster } from './helpers.js';

const P1 = prompt(320, 101);
const P2 = prompt(320, 202);

interface Health {
  status: string;
  warm_start?: { state: string; outcome: string; reason?: string; pending: number };
}

async function health(url: string): Promise<{ code: number; body: Health }> {
  const res = await fetch(`${url}/health`);
  return { code: res.status, body: (await res.json()) as Health };
}

/** Overlap blocks per decode worker for `text`, as /v1/route sees them. */
async function overlap(url: string, text: string): Promise<Record<number, number>> {
  const res = await fetch(`${url}/v1/route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: text }),
  });
  expect(res.status).toBe(200);
  const q = (await res.json()) as { decode: { candidates: Array<{ worker: number; overlap_blocks: number }> } };
  return Object.fromEntries(q.decode.candidates.map((c) => [c.worker, c.overlap_blocks]));
}

const best = (o: Record<number, number>) => Math.max(0, ...Object.values(o));

/**
 * A ZeroMQ ROUTER in front of an engine's replay service that holds every replay request until
 * released: the test sees the replica while its catch-up cannot finish.
 */
class ReplayGate {
  requests = 0;
  private open!: () => void;
  private readonly opened = new Promise<void>((r) => (this.open = r));
  private constructor(
    private readonly router: zmq.Router,
    private readonly target: string,
  ) {
    void this.serve();
  }

  static async start(target: string): Promise<ReplayGate> {
    const router = new zmq.Router({ linger: 0 });
    await router.bind('tcp://127.0.0.1:*');
    return new ReplayGate(router, target);
  }

  get endpoint(): string {
    return this.router.lastEndpoint as string;
  }

  release(): void {
    this.open();
  }

  close(): void {
    this.router.close();
  }

  private async serve(): Promise<void> {
    try {
      for await (const [id, ...request] of this.router) {
        this.requests++;
        await this.opened;
        const dealer = new zmq.Dealer({ linger: 0 });
        dealer.connect(this.target);
        await dealer.send(request);
        for (;;) {
          const reply = await dealer.receive();
          await this.router.send([id, ...reply]);
          if (reply[1]?.toString('hex') === 'ffffffffffffffff') break;
        }
        dealer.close();
      }
    } catch {
      // closed
    }
  }
}

describe.skipIf(NATS_SKIP_REASON !== null)('router replicas: warm start from the snapshot in the object store', () => {
  let cluster: ReplicaCluster;
  const gates: ReplayGate[] = [];
  const replicas = (id: string, extra: Record<string, unknown> = {}) => ({ replicas: Object.assign({ nats: cluster.nats.url, id }, FAST, extra) });

  async function putSnapshot(bytes: Uint8Array): Promise<void> {
    const nc = await connect({ servers: cluster.nats.url });
    try {
      await (await SnapshotStore.open(nc, MODEL.replace(/[^A-Za-z0-9_-]/g, '_'))).put(bytes);
    } finally {
      await nc.close();
    }
  }

  /** A snapshot of empty indexes under these settings, its streams positioned as given. */
  function emptySnapshot(settings: Partial<WarmSnapshot['settings']> = {}, blockSize = BLOCK_SIZE): WarmSnapshot {
    const index = new KvIndexer({ blockSize }).snapshot();
    return {
      settings: Object.assign({ model: MODEL, blockSize: BLOCK_SIZE, mode: 'events', lowerTiers: true, maxBlocks: null }, settings),
      createdAt: Date.now(),
      replica: 'test',
      pools: { prefill: { index, streams: [] }, decode: { index, streams: [] } },
    };
  }

  beforeAll(async () => {
    cluster = await startReplicaCluster({ decode: 2, speedup: 200 });
  });
  afterEach(async () => {
    await cluster.closeReplicas();
    for (const g of gates.splice(0)) g.close();
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it("restores A's index in B, replays what the engines published since, and reports ready only then", async () => {
    const a = await cluster.start('a', replicas('a', { snapshotIntervalMs: 1000 }));
    expect(
      (
        await fetch(`${a.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, prompt: P1, max_tokens: 1 }),
        })
      ).status,
    ).toBe(200);
    await waitFor(async () => best(await overlap(a.url, P1)) > 0, "P1's blocks to reach A's index");
    const seenByA = await overlap(a.url, P1);
    // Two publishes after P1 was indexed: the second captured it for sure.
    const published = async () => (await metricSamples(a.url, 'kvroute_replica_snapshots_published_total', 'result="ok"')).sum;
    const before = await published();
    await waitFor(async () => (await published()) >= before + 2, 'A to publish snapshots holding P1');
    await a.close();

    // Events no replica subscribes to: only the engine's replay buffer holds them now.
    const engine = cluster.fleet.workers[1];
    const nextSeq = async () => ((await (await fetch(`${engine.baseUrl}/admin/faults`)).json()) as { next_event_seq: number }).next_event_seq;
    const seqBefore = await nextSeq();
    expect(
      (
        await fetch(`${engine.baseUrl}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, prompt: P2, max_tokens: 1 }),
        })
      ).status,
    ).toBe(200);
    await waitFor(async () => (await nextSeq()) > seqBefore, "the engine to publish P2's blocks");

    // B's catch-up goes through gates that hold the replays until the test lets them through.
    const workers = [];
    for (const w of cluster.fleet.workers) {
      const gate = await ReplayGate.start(w.replayEndpoint as string);
      gates.push(gate);
      workers.push(Object.assign({}, w, { replayEndpoint: gate.endpoint }));
    }
    const log = captureLog();
    const b = await cluster.start('b', Object.assign({ workers }, replicas('b', { snapshotIntervalMs: 0 })), log.logger);
    await waitFor(async () => gates.some((g) => g.requests > 0), "B's catch-up requests to reach the engines' replay services", 5000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; B's log: ${log.text()}`);
    });
    const warming = await health(b.url);
    expect(warming.code).toBe(503);
    expect(warming.body.status).toBe('warming');
    expect(warming.body.warm_start).toMatchObject({ state: 'catching_up', outcome: 'restored' });
    expect(warming.body.warm_start!.pending).toBeGreaterThan(0);

    for (const g of gates) g.release();
    await waitFor(async () => (await health(b.url)).code === 200, 'B to report ready');
    expect((await health(b.url)).body.warm_start).toMatchObject({ state: 'ready', outcome: 'restored', pending: 0 });
    // No event has reached B live: the restored index gives A's overlap, the replay buffer P2's.
    expect(await overlap(b.url, P1)).toEqual(seenByA);
    expect((await overlap(b.url, P2))[engine.id]).toBeGreaterThanOrEqual(Math.floor(320 / BLOCK_SIZE) - 1);
    expect(log.lines().some((l) => l.msg.startsWith('warm start: index restored'))).toBe(true);
    expect((await metricSamples(b.url, 'kvroute_replica_restores_total', 'outcome="restored"')).sum).toBe(1);

    // A cold replica (warm start off) knows none of it until new events arrive.
    const c = await cluster.start('c', replicas('c', { warmStart: false, snapshotIntervalMs: 0 }));
    expect((await health(c.url)).body.warm_start).toMatchObject({ state: 'ready', outcome: 'off' });
    expect(best(await overlap(c.url, P1))).toBe(0);
  });

  it('reports ready after warmStartTimeoutMs when the catch-up cannot finish, and says so', async () => {
    const w = cluster.fleet.workers[0];
    const gate = await ReplayGate.start(w.replayEndpoint as string);
    gates.push(gate);
    const snapshot = emptySnapshot();
    snapshot.pools.decode.streams = [{ worker: w.id, endpoints: [w.kvEvents as string], lastSeq: [0n] }];
    await putSnapshot(encodeWarmSnapshot(snapshot));
    const log = captureLog();
    const workers = [Object.assign({}, w, { replayEndpoint: gate.endpoint }), cluster.fleet.workers[1]];
    const r = await cluster.start('slow', Object.assign({ workers }, replicas('slow', { snapshotIntervalMs: 0, warmStartTimeoutMs: 1500 })), log.logger);
    expect((await health(r.url)).body.warm_start).toMatchObject({ state: 'catching_up', outcome: 'restored', pending: 1 });
    await waitFor(async () => (await health(r.url)).code === 200, 'the replica to report ready after warmStartTimeoutMs', 5000);
    expect((await health(r.url)).body.warm_start).toMatchObject({ state: 'ready', outcome: 'restored', timedOut: true });
    expect(log.lines().some((l) => l.msg.startsWith('warm start: the catch-up from the engines') && l.level === 40)).toBe(true);
  });

  it('starts cold, saying why, on a damaged snapshot, one of another block size or model, or a damaged index', async () => {
    const good = encodeWarmSnapshot(emptySnapshot());
    const damagedIndex = Buffer.from(good);
    damagedIndex[damagedIndex.length - 3] ^= 0xff;
    const cases: Array<{ bytes: Uint8Array; outcome: string; reason: RegExp }> = [
      { bytes: Buffer.from('not a snapshot at all'), outcome: 'rejected', reason: /bad magic/ },
      { bytes: good.subarray(0, good.length - 10), outcome: 'rejected', reason: /truncated/ },
      { bytes: damagedIndex, outcome: 'rejected', reason: /decode index/ },
      { bytes: encodeWarmSnapshot(emptySnapshot({ blockSize: 32 }, 32)), outcome: 'mismatch', reason: /blockSize 32 \(here 16\)/ },
      { bytes: encodeWarmSnapshot(emptySnapshot({ model: 'other-model' })), outcome: 'mismatch', reason: /model other-model/ },
      { bytes: encodeWarmSnapshot(Object.assign(emptySnapshot(), { createdAt: Date.now() - 3_600_000 })), outcome: 'stale', reason: /snapshotMaxAgeMs/ },
    ];
    for (const [i, c] of cases.entries()) {
      await putSnapshot(c.bytes);
      const log = captureLog();
      const r = await cluster.start(`cold${i}`, replicas(`cold${i}`, { snapshotIntervalMs: 0 }), log.logger);
      const h = await health(r.url);
      expect(h.code).toBe(200);
      expect(h.body.warm_start).toMatchObject({ state: 'ready', outcome: c.outcome });
      expect(h.body.warm_start!.reason).toMatch(c.reason);
      const line = log.lines().find((l) => l.msg === 'warm start: the snapshot cannot be used, cold start');
      expect(line).toMatchObject({ outcome: c.outcome });
      expect(String(line!.reason)).toMatch(c.reason);
      // It routes as any cold replica does.
      expect(best(await overlap(r.url, P1))).toBe(0);
      await r.close();
    }
  });
});
