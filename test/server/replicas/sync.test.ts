// ReplicaSync against hand-made messages on the wire (a real nats-server, one replica): a
// restarted peer's old bookings are dropped, lost batches make the replica ask for an
// announcement, malformed messages are counted and change nothing, own echoes are ignored.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBatch, encodeBatch, encodeHeartbeat, type BookingBatch } from '../../../src/server/replicas/protocol.js';
import { NATS_SKIP_REASON } from '../../helpers/nats.js';
import { MODEL, metricSum, waitFor } from '../helpers/router.js';
import { startReplicaCluster, type Replica, type ReplicaCluster } from './helpers.js';

const SUBJECT = `kvroute.${MODEL}.bookings`;

describe.skipIf(NATS_SKIP_REASON !== null)('ReplicaSync on the wire', () => {
  let cluster: ReplicaCluster;
  let nc: NatsConnection;
  let b: Replica;
  const announced: BookingBatch[] = [];

  beforeAll(async () => {
    cluster = await startReplicaCluster({ decode: 2, speedup: 200 });
    // A long TTL: the hand-made peer never heartbeats on its own.
    b = await cluster.start('b', { replicas: { nats: cluster.nats.url, id: 'b', heartbeatMs: 100, ttlMs: 60_000 } });
    nc = await connect({ servers: cluster.nats.url });
    nc.subscribe(SUBJECT, { callback: (_err, msg) => void announced.push(decodeBatch(msg.data)!) });
  });
  afterAll(async () => {
    await nc?.close();
    await cluster?.close();
  });

  const worker = () => cluster.fleet.workers[0].id;
  const batch = (o: Partial<BookingBatch>): Uint8Array =>
    encodeBatch(Object.assign({ from: 'x', epoch: 'e1', sentAt: Date.now(), seq: 1, reset: false, ask: false, events: [] }, o));
  const book = (requestId: string) => ({
    kind: 'book' as const,
    pool: 'decode' as const,
    requestId,
    worker: worker(),
    dpRank: 0,
    promptTokens: 64,
    overlapBlocks: 0,
    hashes: new Uint8Array(32),
  });
  const held = () => metricSum(b.url, 'kvroute_replica_bookings', 'origin="x"');

  it("books a peer's events under its id, and drops them when it restarts under a new epoch", async () => {
    nc.publish(SUBJECT, batch({ seq: 1, events: [book('r1'), book('r2')] }));
    await waitFor(async () => (await held()) === 2, "x's bookings to be applied");
    nc.publish(`kvroute.${MODEL}.heartbeats`, encodeHeartbeat({ from: 'x', epoch: 'e2', sentAt: Date.now(), bookings: 0 }));
    await waitFor(async () => (await held()) === 0, "x's previous run's bookings to be dropped");
  });

  it('asks for an announcement when batches were lost', async () => {
    nc.publish(SUBJECT, batch({ epoch: 'e3', seq: 1, events: [book('r3')] }));
    await waitFor(async () => (await held()) === 1, 'the first batch');
    const before = announced.filter((m) => m.from === 'b' && m.ask).length;
    nc.publish(SUBJECT, batch({ epoch: 'e3', seq: 5, events: [{ kind: 'free', pool: 'decode', requestId: 'r3' }] }));
    await waitFor(() => announced.filter((m) => m.from === 'b' && m.ask).length > before, 'B to ask for announcements');
    expect(await metricSum(b.url, 'kvroute_replica_resyncs_total', 'kind="gaps"')).toBe(1);
    expect(await held()).toBe(0);
  });

  it("replaces what it holds of a peer with the peer's announcement", async () => {
    nc.publish(SUBJECT, batch({ epoch: 'e3', seq: 6, events: [book('r4'), book('r5')] }));
    await waitFor(async () => (await held()) === 2, 'two bookings');
    nc.publish(SUBJECT, batch({ epoch: 'e3', seq: 7, reset: true, events: [book('r6')] }));
    await waitFor(async () => (await held()) === 1, 'the announcement to replace them');
  });

  it('counts malformed messages and ignores its own id, changing nothing', async () => {
    const invalid = await metricSum(b.url, 'kvroute_replica_invalid_messages_total');
    nc.publish(SUBJECT, new Uint8Array([1, 2, 3]));
    nc.publish(`kvroute.${MODEL}.heartbeats`, new TextEncoder().encode('{"not":"msgpack"}'));
    nc.publish(SUBJECT, batch({ from: 'b', epoch: 'other', seq: 1, events: [book('mine')] }));
    await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_invalid_messages_total')) === invalid + 2, 'the malformed messages to be counted');
    expect(await metricSum(b.url, 'kvroute_replica_bookings', 'origin="b"')).toBe(0);
    expect(await held()).toBe(1);
    expect((await fetch(`${b.url}/health`)).status).toBe(200);
  });
});
