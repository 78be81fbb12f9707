// Session pins and fleet changes shared through JetStream KV buckets: a session started on A
// continues on B on the same worker; a worker registered, drained, activated or removed through
// A's admin API is so on B, and on a replica that starts afterwards.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NATS_SKIP_REASON } from '../../helpers/nats.js';
import { waitFor } from '../helpers/router.js';
import { complete, startReplicaCluster, type ReplicaCluster } from './helpers.js';

interface WorkerRow {
  id: number;
  state: string;
}

async function workers(url: string): Promise<Map<number, string>> {
  const body = (await (await fetch(`${url}/admin/workers`)).json()) as { workers: WorkerRow[] };
  return new Map(body.workers.map((w) => [w.id, w.state]));
}

async function admin(url: string, method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

describe.skipIf(NATS_SKIP_REASON !== null)('router replicas: shared sessions and fleet', () => {
  let cluster: ReplicaCluster;

  beforeAll(async () => {
    // Three simulated workers, two of them configured: the third is registered at runtime.
    cluster = await startReplicaCluster({ decode: 3, workers: 2, speedup: 200 });
  });
  afterEach(async () => {
    await cluster.closeReplicas();
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('continues a session started on A on the same worker through B', async () => {
    // Round robin moves every request on: what keeps the session in place on B is A's pin.
    const extra = { sessionAffinity: true, routing: { policy: 'round_robin' as const } };
    const a = await cluster.start('a', extra);
    const b = await cluster.start('b', extra);
    const first = await complete(a.url, 'turn 1', { 'x-session-id': 'conv-7' });
    expect(first.status).toBe(200);
    await waitFor(async () => {
      const q = await fetch(`${b.url}/v1/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'conv-7' },
        body: JSON.stringify({ prompt: 'turn 2' }),
      });
      return ((await q.json()) as { decode: { worker: number } }).decode.worker === first.worker;
    }, "A's session pin to reach B");
    for (const turn of ['turn 2', 'turn 3', 'turn 4']) expect((await complete(b.url, turn, { 'x-session-id': 'conv-7' })).worker).toBe(first.worker);
    const unpinned = new Set<number>();
    for (const t of ['x', 'y', 'z']) unpinned.add((await complete(b.url, t)).worker);
    expect(unpinned.size).toBeGreaterThan(1);
  });

  it('applies registrations, drains, activations and removals made through A on B and on a later replica', async () => {
    const a = await cluster.start('a');
    const b = await cluster.start('b');
    const third = cluster.fleet.workers[2];
    expect(await admin(a.url, 'POST', '/admin/workers', third)).toBe(201);
    await waitFor(async () => (await workers(b.url)).has(third.id), 'the registration to reach B');

    const drained = cluster.fleet.workers[0].id;
    expect(await admin(a.url, 'POST', `/admin/workers/${drained}/drain`)).toBe(200);
    await waitFor(async () => (await workers(b.url)).get(drained) === 'draining', 'the drain to reach B');
    for (let i = 0; i < 6; i++) expect((await complete(b.url, `after drain ${i}`)).worker).not.toBe(drained);

    // A replica started now replays the shared fleet over its configuration.
    const c = await cluster.start('c');
    await waitFor(async () => {
      const w = await workers(c.url);
      return w.get(drained) === 'draining' && w.has(third.id);
    }, 'the shared fleet to reach a replica that started later');

    expect(await admin(b.url, 'POST', `/admin/workers/${drained}/activate`)).toBe(200);
    await waitFor(
      async () => (await workers(a.url)).get(drained) === 'healthy' && (await workers(c.url)).get(drained) === 'healthy',
      'the activation through B to reach A and C',
    );

    expect(await admin(c.url, 'DELETE', `/admin/workers/${third.id}`)).toBe(200);
    await waitFor(async () => !(await workers(a.url)).has(third.id) && !(await workers(b.url)).has(third.id), 'the removal through C to reach A and B');
  });
});
