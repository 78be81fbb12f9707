// Router replicas sharing bookings through a real nats-server, in front of one simulated fleet:
// a booking on A shows in B's /v1/route candidate load, freeing it on A clears it on B, and a
// replica killed with SIGKILL has its bookings released by the others after the TTL.
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NATS_SKIP_REASON } from '../../helpers/nats.js';
import { freePort, spawnCli, type CliProcess } from '../../helpers/processes.js';
import { MODEL, metricSum, prompt, waitFor, waitForNoLoad } from '../helpers/router.js';
import { candidates, FAST, holdStream, peersOf, startReplicaCluster, type ReplicaCluster } from './helpers.js';

describe.skipIf(NATS_SKIP_REASON !== null)('router replicas over NATS', () => {
  let cluster: ReplicaCluster;
  const startReplica = (id: string, extra?: Parameters<ReplicaCluster['start']>[1]) => cluster.start(id, extra);
  const config = (id: string) => cluster.config(id);

  beforeAll(async () => {
    cluster = await startReplicaCluster({ decode: 2 });
  });
  afterEach(async () => {
    await cluster.closeReplicas();
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it("shows a booking made on A in B's candidate load, and clears it when A frees it", async () => {
    const a = await startReplica('a');
    const b = await startReplica('b');
    await waitFor(async () => (await peersOf(b.url)).includes('a'), 'B to hear from A');
    const idle = await candidates(b.url);

    const held = await holdStream(a.url, 1);
    // 320 prompt tokens = 20 blocks booked on A's chosen worker, seen by B once the batch arrives.
    await waitFor(async () => (await candidates(b.url)).get(held.worker)!.decode_blocks >= idle.get(held.worker)!.decode_blocks + 20, "A's booking to reach B");
    const other = [...idle.keys()].find((w) => w !== held.worker)!;
    expect((await candidates(b.url)).get(other)!.decode_blocks).toBe(idle.get(other)!.decode_blocks);
    expect(await metricSum(b.url, 'kvroute_replica_bookings', 'origin="a"')).toBe(1);

    held.stop();
    await waitFor(async () => (await candidates(b.url)).get(held.worker)!.decode_blocks === idle.get(held.worker)!.decode_blocks, "A's free to reach B");
    expect(await metricSum(b.url, 'kvroute_replica_bookings', 'origin="a"')).toBe(0);
    await waitForNoLoad(a.url);
    await waitForNoLoad(b.url);
    expect(await metricSum(b.url, 'kvroute_replica_events_total', 'fate="in"')).toBeGreaterThanOrEqual(3);
    expect(await metricSum(b.url, 'kvroute_replica_invalid_messages_total')).toBe(0);
  });

  it("routes B's next request away from the worker A loaded", async () => {
    const a = await startReplica('a', { routing: { policy: 'least_loaded' } });
    const b = await startReplica('b', { routing: { policy: 'least_loaded' } });
    await waitFor(async () => (await peersOf(b.url)).includes('a'), 'B to hear from A');
    const held = await holdStream(a.url, 2);
    await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_bookings', 'origin="a"')) === 1, "A's booking to reach B");
    const res = await fetch(`${b.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: prompt(64, 3), max_tokens: 1 }),
    });
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('x-kvroute-decode-worker'))).not.toBe(held.worker);
    held.stop();
  });

  it('announces its bookings to a replica that joins later', async () => {
    const a = await startReplica('a');
    const held = await holdStream(a.url, 4);
    const b = await startReplica('b');
    await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_bookings', 'origin="a"')) === 1, "A's earlier booking to reach the newcomer");
    held.stop();
    await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_bookings', 'origin="a"')) === 0, "A's free to reach B");
  });

  it("in approximate mode, teaches B's index what A routed (no engine events)", async () => {
    const approx = { indexerMode: 'approximate' as const };
    const a = await startReplica('a', approx);
    const b = await startReplica('b', approx);
    await waitFor(async () => (await peersOf(b.url)).includes('a'), 'B to hear from A');
    const text = prompt(320, 6);
    const overlapOn = async (url: string) => {
      const res = await fetch(`${url}/v1/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: text }),
      });
      return ((await res.json()) as { decode: { overlap_blocks: number } }).decode.overlap_blocks;
    };
    expect(await overlapOn(b.url)).toBe(0);
    const res = await fetch(`${a.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: text, max_tokens: 1 }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    // 320 tokens = 20 full blocks, recorded by A's decision and by B from A's booking.
    expect(await overlapOn(a.url)).toBe(20);
    await waitFor(async () => (await overlapOn(b.url)) === 20, "A's decision to reach B's approximate index");
  });

  it('releases the bookings of a replica killed with SIGKILL once its TTL passes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvroute-replicas-'));
    let a: CliProcess | undefined;
    try {
      const file = join(dir, 'a.json');
      const port = await freePort();
      writeFileSync(file, JSON.stringify(Object.assign(config('killed'), { port, host: '127.0.0.1', logLevel: 'info' })));
      a = spawnCli(['serve', '--config', file]);
      const url = (await a.waitFor(/kvroute listening on (http:\/\/\S+)/))[1];
      const b = await startReplica('b');
      await waitFor(async () => (await peersOf(b.url)).includes('killed'), 'B to hear from A');

      const held = await holdStream(url, 5);
      await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_bookings', 'origin="killed"')) === 1, "A's booking to reach B");
      a.kill();
      await a.exited();
      held.stop();
      await waitFor(async () => (await metricSum(b.url, 'kvroute_replica_resyncs_total', 'kind="gone"')) === 1, 'B to notice A is gone', FAST.ttlMs * 20);
      expect(await metricSum(b.url, 'kvroute_replica_bookings', 'origin="killed"')).toBe(0);
      expect(await peersOf(b.url)).not.toContain('killed');
      await waitForNoLoad(b.url);
    } finally {
      a?.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
