// NATS stopped and restarted under load: the replicas go on routing on their own views (degraded,
// said in /health and /metrics), lose no request, resynchronise when NATS returns (bookings
// re-announced, a drain made meanwhile delivered), and end with every load gauge at 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATS_SKIP_REASON, startNatsServer } from '../../helpers/nats.js';
import { freePort } from '../../helpers/processes.js';
import { metricSum, prompt, waitFor, waitForNoLoad } from '../helpers/router.js';
import { complete, peersOf, startReplicaCluster, type ReplicaCluster } from './helpers.js';

interface ReplicaHealth {
  status: string;
  replicas: { connected: boolean };
}

const health = async (url: string) => (await (await fetch(`${url}/health`)).json()) as ReplicaHealth;

describe.skipIf(NATS_SKIP_REASON !== null)('router replicas when NATS goes away', () => {
  let cluster: ReplicaCluster;

  beforeAll(async () => {
    cluster = await startReplicaCluster({ decode: 2, speedup: 200 });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('routes on through a NATS outage, resyncs when it returns, and ends with no load anywhere', async () => {
    const a = await cluster.start('a', { sessionAffinity: true });
    const b = await cluster.start('b', { sessionAffinity: true });
    await waitFor(async () => (await peersOf(a.url)).includes('b') && (await peersOf(b.url)).includes('a'), 'the replicas to hear each other');

    const statuses: number[] = [];
    let phase: 'before' | 'outage' | 'after' = 'before';
    const sentIn = { before: 0, outage: 0, after: 0 };
    let running = true;
    // Four clients, alternating between the replicas, until told to stop.
    const clients = [0, 1, 2, 3].map(async (c) => {
      for (let i = 0; running; i++) {
        sentIn[phase]++;
        const r = await complete([a, b][(c + i) % 2].url, prompt(48, c * 1000 + i), { 'x-session-id': `client-${c}` });
        statuses.push(r.status);
      }
    });
    await waitFor(() => sentIn.before >= 20, 'load before the outage');

    await cluster.nats.stop();
    await waitFor(async () => !(await health(a.url)).replicas.connected && !(await health(b.url)).replicas.connected, 'both replicas to see NATS gone');
    phase = 'outage';
    const during = await health(a.url);
    expect(during.status).toBe('ready');
    expect(await metricSum(a.url, 'kvroute_replicas_connected')).toBe(0);
    // A fleet change made while cut off reaches the others once NATS is back.
    const drained = cluster.fleet.workers[0].id;
    expect((await fetch(`${a.url}/admin/workers/${drained}/drain`, { method: 'POST' })).status).toBe(200);
    await waitFor(() => sentIn.outage >= 20, 'load during the outage');

    await cluster.nats.restart();
    await waitFor(async () => (await health(a.url)).replicas.connected && (await health(b.url)).replicas.connected, 'both replicas to reconnect');
    phase = 'after';
    await waitFor(async () => {
      const body = (await (await fetch(`${b.url}/admin/workers`)).json()) as { workers: Array<{ id: number; state: string }> };
      return body.workers.find((w) => w.id === drained)?.state === 'draining';
    }, 'the drain made during the outage to reach B');
    await waitFor(() => sentIn.after >= 20, 'load after the outage');
    running = false;
    await Promise.all(clients);

    expect(statuses.length).toBeGreaterThanOrEqual(60);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await metricSum(a.url, 'kvroute_replicas_connected')).toBe(1);
    expect(await metricSum(a.url, 'kvroute_replica_resyncs_total', 'kind="out"')).toBeGreaterThanOrEqual(2);
    for (const r of [a, b]) {
      await waitForNoLoad(r.url);
      await waitFor(
        async () => (await metricSum(r.url, 'kvroute_replica_bookings')) === 0 && (await metricSum(r.url, 'kvroute_replica_local_bookings')) === 0,
        'the shared bookings to drain',
      );
    }
  });

  it('starts without NATS (degraded), and joins when it comes up', async () => {
    const port = await freePort();
    const lone = await cluster.start('lone', {
      replicas: { nats: `nats://127.0.0.1:${port}`, id: 'lone', heartbeatMs: 100, ttlMs: 600, connectTimeoutMs: 200 },
    });
    const first = await health(lone.url);
    expect(first.status).toBe('ready');
    expect(first.replicas.connected).toBe(false);
    expect((await complete(lone.url, 'alone')).status).toBe(200);
    const late = await startNatsServer(port);
    try {
      await waitFor(async () => (await health(lone.url)).replicas.connected, 'the replica to connect once NATS is up');
    } finally {
      await lone.close();
      await late.close();
    }
  });
});
