// Kubernetes discovery end to end: a router configured with `discovery.kubernetes` against the
// scripted API server of fake-kube.ts (through a kubeconfig pointing at it), the pods' engines
// simulated workers on loopback. Every case ends with the router's fleet equal to the Ready pods
// and no booking left.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import type { RouterConfigInput } from '../../../src/server/config/config.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';
import { workerIdOf } from '../../../src/server/discovery/pod-worker.js';
import { captureLog } from '../../helpers/log-capture.js';
import { enginePod, FakeKube, type PodSpec } from './fake-kube.js';
import { waitFor } from '../helpers/router.js';

const MODEL = 'kvroute-sim';
const BLOCK_SIZE = 16;

let kube: FakeKube;
let sims: SimWorker[];
let routers: Array<{ router: Router; server?: RunningServer }>;

beforeEach(async () => {
  kube = new FakeKube();
  await kube.start();
  sims = [];
  routers = [];
});

afterEach(async () => {
  for (const r of routers) {
    await r.server?.close();
    await r.router.close();
  }
  await Promise.all(sims.map((s) => s.close()));
  await kube.stop();
});

async function sim(host = '127.0.0.1'): Promise<SimWorker> {
  const w = await startSimWorker({ id: sims.length, host, model: MODEL, engine: { blockSize: BLOCK_SIZE, kvBlocks: 2048, speedup: 200, seed: sims.length } });
  sims.push(w);
  return w;
}

const portOf = (endpoint: string) => Number(/:(\d+)\/?$/.exec(endpoint)![1]);

/** The pod of a simulated engine: its address and named ports. */
function podOf(w: SimWorker, p: Omit<PodSpec, 'ip' | 'httpPort'> & { events?: boolean }): PodSpec {
  const url = new URL(w.url);
  const events = p.events !== false;
  return {
    ...p,
    ip: url.hostname,
    httpPort: Number(url.port),
    ...(events ? { eventsPort: portOf(w.eventsEndpoint), replayPort: portOf(w.replayEndpoint) } : {}),
  };
}

type KubeSettings = NonNullable<NonNullable<RouterConfigInput['discovery']>['kubernetes']>;

function config(extra: Partial<KubeSettings> = {}, more: RouterConfigInput = {}): RouterConfigInput {
  return {
    port: 0,
    blockSize: BLOCK_SIZE,
    model: MODEL,
    health: { intervalMs: 0 },
    seed: 1,
    ...more,
    discovery: { kubernetes: { kubeconfig: kube.kubeconfig(), retryBaseMs: 20, retryMaxMs: 200, ...extra, selector: extra.selector ?? 'app=vllm' } },
  };
}

async function router(c: RouterConfigInput = config(), logger = captureLog()): Promise<{ router: Router; url: string; logger: ReturnType<typeof captureLog> }> {
  const r = await createRouter(c, { logger: logger.logger });
  const server = await listenUws(r, { host: '127.0.0.1', port: 0 });
  routers.push({ router: r, server });
  return { router: r, url: server.url, logger };
}

/** The discovered fleet as /admin/workers shows it: pod -> [url, state]. */
async function fleet(url: string): Promise<Record<string, [string, string]>> {
  const r = await fetch(`${url}/admin/workers`);
  const { workers } = (await r.json()) as { workers: Array<{ baseUrl: string; state: string; discovered?: { pod: string } }> };
  return Object.fromEntries(workers.map((w) => [w.discovered?.pod ?? `static:${w.baseUrl}`, [w.baseUrl, w.state]]));
}

/** The Ready pods the fake server holds, as the fleet should show them. */
function readyPods(): Record<string, [string, string]> {
  const out: Record<string, [string, string]> = {};
  for (const p of kube.pods.values()) {
    const ready = p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && !p.metadata.deletionTimestamp;
    const http = p.spec.containers[0].ports?.find((x) => x.name === 'http');
    if (p.metadata.labels?.app === 'vllm' && ready && p.status.podIP && http)
      out[`${p.metadata.namespace}/${p.metadata.name}`] = [`http://${p.status.podIP}:${http.containerPort}`, 'healthy'];
  }
  return out;
}

async function complete(url: string, prompt = 'hello there, a prompt of a few blocks to route somewhere useful'): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt, max_tokens: 4 }),
  });
}

async function booked(r: Router): Promise<number> {
  const text = await r.metrics.render();
  return [...text.matchAll(/^kvroute_worker_active_requests\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

async function settled(url: string, r: Router): Promise<void> {
  await waitFor(
    async () =>
      JSON.stringify(await fleet(url)) === JSON.stringify(sorted(readyPods())) ||
      JSON.stringify(sorted(await fleet(url))) === JSON.stringify(sorted(readyPods())),
    'the fleet to equal the ready pods',
  );
  expect(sorted(await fleet(url))).toEqual(sorted(readyPods()));
  await waitFor(async () => (await booked(r)) === 0, 'no booking left');
}

function sorted<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}

describe('Kubernetes discovery', () => {
  it('starts with no pods and answers 503 until a Ready pod arrives, then routes through it', async () => {
    const { router: r, url } = await router();
    const refused = await complete(url);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('no_eligible_worker');
    const health = (await (await fetch(`${url}/health`)).json()) as { discovery: { connected: boolean; namespace: string } };
    expect(health.discovery).toMatchObject({ connected: true, namespace: 'llm', selector: 'app=vllm' });

    const w = await sim();
    kube.put(enginePod(podOf(w, { name: 'vllm-0', ready: false })));
    await waitFor(async () => (await booked(r)) === 0 && kube.watchCount() > 0, 'the watch');
    await new Promise((res) => setTimeout(res, 100));
    expect(await fleet(url)).toEqual({});
    kube.put(enginePod(podOf(w, { name: 'vllm-0' })));
    await settled(url, r);
    const served = await complete(url);
    expect(served.status).toBe(200);
    expect(served.headers.get('x-kvroute-decode-worker')).toBe(String(workerIdOf('uid-vllm-0')));
    await settled(url, r);
  });

  it('follows pods through not ready, ready again, a restart with a new IP, and deletion', async () => {
    const w0 = await sim();
    const w1 = await sim();
    kube.put(enginePod(podOf(w0, { name: 'vllm-0' })));
    kube.put(enginePod(podOf(w1, { name: 'vllm-1', events: false })));
    const { router: r, url } = await router();
    await settled(url, r);
    const id0 = workerIdOf('uid-vllm-0');

    // Not Ready: out of selection, a request in flight on it finishes and frees its booking.
    // Slow enough (5x real time) that the request is still running when the poll looks, on a quiet machine too.
    w0.faults.slow(1000);
    const inFlight = fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-worker-instance-id': String(id0) },
      body: JSON.stringify({ model: MODEL, prompt: 'a request that runs for a while', max_tokens: 8 }),
    });
    await waitFor(async () => (await booked(r)) === 1, 'the request booked');
    kube.put(enginePod(podOf(w0, { name: 'vllm-0', ready: false })));
    await waitFor(async () => (await fleet(url))['llm/vllm-0']?.[1] === 'not_ready', 'vllm-0 not ready');
    for (let i = 0; i < 4; i++)
      expect((await complete(url, `other prompt ${i}`)).headers.get('x-kvroute-decode-worker')).toBe(String(workerIdOf('uid-vllm-1')));
    expect((await inFlight).status).toBe(200);
    w0.faults.slow(1);
    await waitFor(async () => (await booked(r)) === 0, 'the booking freed');

    // Ready again: back in selection, same worker.
    kube.put(enginePod(podOf(w0, { name: 'vllm-0' })));
    await settled(url, r);

    // Restarted with a new pod IP (a new engine on 127.0.0.2): same worker id, the new URL, index cleared.
    const w2 = await sim('127.0.0.2');
    const prompt = 'a prompt that leaves blocks in the index of the first engine, long enough for several blocks of sixteen tokens';
    await complete(url, prompt);
    kube.put(enginePod(podOf(w2, { name: 'vllm-0', restartCount: 1, containerId: 'containerd://vllm-0-1' })));
    await settled(url, r);
    const after = (await (await fetch(`${url}/admin/workers/${id0}`)).json()) as { worker: { baseUrl: string } };
    expect(after.worker.baseUrl).toBe(w2.url);
    const explained = (await (await fetch(`${url}/v1/route`, { method: 'POST', body: JSON.stringify({ model: MODEL, prompt }) })).json()) as {
      decode: { candidates: Array<{ worker: number; overlap_blocks: number }> };
    };
    expect(explained.decode.candidates.find((c) => c.worker === id0)?.overlap_blocks).toBe(0);

    // A container restart on the same IP is a restarted engine too.
    const metrics = async () => Number(/kvroute_discovery_worker_changes_total\{change="restarted"\} (\d+)/.exec(await r.metrics.render())?.[1]);
    expect(await metrics()).toBe(1);
    kube.put(enginePod(podOf(w2, { name: 'vllm-0', restartCount: 2, containerId: 'containerd://vllm-0-2' })));
    await waitFor(async () => (await metrics()) === 2, 'the second restart');
    await settled(url, r);

    // Terminating (out of selection), then deleted: removed, nothing left behind.
    kube.put(enginePod(podOf(w1, { name: 'vllm-1', events: false, terminating: true })));
    await waitFor(async () => (await fleet(url))['llm/vllm-1']?.[1] === 'not_ready', 'vllm-1 terminating');
    kube.delete('llm', 'vllm-1');
    await settled(url, r);
    expect(Object.keys(await fleet(url))).toEqual(['llm/vllm-0']);
    expect((await complete(url)).status).toBe(200);
    await settled(url, r);
  });

  it('resumes a watch cut mid-stream from its resourceVersion, losing nothing and dropping no worker', async () => {
    const w0 = await sim();
    const w1 = await sim();
    kube.put(enginePod(podOf(w0, { name: 'vllm-0' })));
    const { router: r, url } = await router();
    await settled(url, r);
    const lists = kube.lists();
    await waitFor(() => kube.watchCount() === 1, 'the watch');
    kube.cutWatches();
    // Changed while no watch runs: the next watch replays it from the history.
    kube.put(enginePod(podOf(w1, { name: 'vllm-1' })));
    await waitFor(() => kube.watchCount() === 1, 'the watch again');
    await settled(url, r);
    expect(kube.lists()).toBe(lists);
    const last = kube.watches().at(-1)!;
    expect(Number(last.query.resourceVersion)).toBeGreaterThan(100);
    expect(last.query.allowWatchBookmarks).toBe('true');
    const changes = await r.metrics.render();
    expect(changes).toMatch(/kvroute_discovery_worker_changes_total\{change="removed"\} 0/);
  });

  it('re-lists after 410 Gone and reconciles: deleted pods leave, new ones join, those still there stay', async () => {
    const w = [await sim(), await sim(), await sim()];
    kube.put(enginePod(podOf(w[0], { name: 'vllm-0' })));
    kube.put(enginePod(podOf(w[1], { name: 'vllm-1' })));
    const { router: r, url } = await router();
    await settled(url, r);
    await waitFor(() => kube.watchCount() === 1, 'the watch');
    const lists = kube.lists();
    kube.cutWatches();
    kube.delete('llm', 'vllm-1');
    kube.put(enginePod(podOf(w[2], { name: 'vllm-2' })));
    kube.compact();
    await waitFor(() => kube.lists() > lists && kube.watchCount() === 1, 'a fresh list');
    await settled(url, r);
    expect(Object.keys(sorted(await fleet(url)))).toEqual(['llm/vllm-0', 'llm/vllm-2']);
    // vllm-0 was never removed: one removal (vllm-1) in all.
    expect(await r.metrics.render()).toMatch(/kvroute_discovery_worker_changes_total\{change="removed"\} 1/);
  });

  it('moves its resourceVersion on with bookmarks, so a re-watch after compaction needs no list', async () => {
    const w0 = await sim();
    kube.put(enginePod(podOf(w0, { name: 'vllm-0' })));
    const { router: r, url } = await router();
    await settled(url, r);
    await waitFor(() => kube.watchCount() === 1, 'the watch');
    // Pods of another selector change the resourceVersion without an event for this watch.
    for (let i = 0; i < 3; i++) kube.put(enginePod({ name: `other-${i}`, labels: { app: 'other' }, ip: '127.0.0.9', httpPort: 1 }));
    kube.bookmark();
    await waitFor(() => kube.requests.length > 0, 'x');
    await new Promise((res) => setTimeout(res, 100));
    kube.compact();
    const lists = kube.lists();
    kube.cutWatches();
    await waitFor(() => kube.watchCount() === 1, 'the watch again');
    expect(kube.lists()).toBe(lists);
    expect(kube.watches().at(-1)!.query.resourceVersion).toBe(String(kube.resourceVersion));
    await settled(url, r);
  });

  it('keeps routing on the last known fleet while the API server is down, says so, and reconciles after its restart', async () => {
    const w = [await sim(), await sim()];
    kube.put(enginePod(podOf(w[0], { name: 'vllm-0' })));
    kube.put(enginePod(podOf(w[1], { name: 'vllm-1' })));
    const { router: r, url, logger } = await router();
    await settled(url, r);
    await kube.stop();
    await waitFor(async () => /kvroute_discovery_connected 0/.test(await r.metrics.render()), 'disconnected');
    // The watch is cut first; the tries after it find nobody listening.
    const discoveryHealth = async () => ((await (await fetch(`${url}/health`)).json()) as { discovery: { connected: boolean; lastError?: string } }).discovery;
    await waitFor(async () => (await discoveryHealth()).lastError === 'unreachable', 'the API server unreachable');
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { discovery: unknown }).discovery).toMatchObject({ connected: false, lastError: 'unreachable' });
    expect(logger.lines().some((l) => l.level >= 40 && /routing on the last known fleet/.test(l.msg))).toBe(true);
    expect(Object.keys(await fleet(url))).toHaveLength(2);
    expect((await complete(url)).status).toBe(200);
    // Meanwhile vllm-1 goes away; the restarted server has no history (410), so the router lists again.
    kube.delete('llm', 'vllm-1');
    await kube.restart();
    await waitFor(async () => /kvroute_discovery_connected 1/.test(await r.metrics.render()), 'reconnected');
    await settled(url, r);
    expect(Object.keys(await fleet(url))).toEqual(['llm/vllm-0']);
    expect(logger.lines().some((l) => /reachable again/.test(l.msg))).toBe(true);
  });

  it('owns only what it added: static and admin workers stay, the admin API may drain a discovered worker but not delete it', async () => {
    const w = [await sim(), await sim(), await sim()];
    kube.put(enginePod(podOf(w[0], { name: 'vllm-0' })));
    const { router: r, url } = await router(config({}, { workers: [{ id: 1, baseUrl: w[1].url }] }));
    const admin = (path: string, method: string, body?: unknown) =>
      fetch(`${url}/admin/${path}`, { method, ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
    expect((await admin('workers', 'POST', { id: 2, baseUrl: w[2].url })).status).toBe(201);
    await waitFor(async () => Object.keys(await fleet(url)).length === 3, 'three workers');
    const id0 = workerIdOf('uid-vllm-0');
    const refused = await admin(`workers/${id0}`, 'DELETE');
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('worker_discovered');
    expect(((await (await admin(`workers/${id0}/drain`, 'POST')).json()) as { worker: { state: string } }).worker.state).toBe('draining');
    // A fresh list (410) and the pod's deletion never touch the static and admin workers.
    kube.compact();
    kube.cutWatches();
    kube.delete('llm', 'vllm-0');
    await waitFor(async () => (await fleet(url))['llm/vllm-0'] === undefined, 'vllm-0 gone');
    expect(Object.keys(await fleet(url)).sort()).toEqual([`static:${w[1].url}`, `static:${w[2].url}`].sort());
    expect((await complete(url)).status).toBe(200);
    await waitFor(async () => (await booked(r)) === 0, 'no booking left');
  });

  it('skips a pod with a bad annotation or label, naming the pod and the key, and takes it once fixed', async () => {
    const w0 = await sim();
    const w1 = await sim();
    kube.put(enginePod(podOf(w0, { name: 'vllm-0', annotations: { 'kvroute.io/dp-size': 'two' } })));
    kube.put(enginePod(podOf(w1, { name: 'vllm-1', labels: { 'kvroute.io/role': 'boss' } })));
    kube.put(enginePod(podOf(w1, { name: 'vllm-other', uid: 'uid-other', annotations: { 'kvroute.io/model': 'llama' } })));
    const { router: r, url, logger } = await router();
    await waitFor(() => logger.lines().filter((l) => l.msg.startsWith('pod skipped')).length === 3, 'three skips logged');
    const skips = logger.lines().filter((l) => l.msg.startsWith('pod skipped'));
    expect(skips.map((l) => [l.pod, l.key])).toEqual(
      expect.arrayContaining([
        ['llm/vllm-0', 'kvroute.io/dp-size'],
        ['llm/vllm-1', 'kvroute.io/role'],
        ['llm/vllm-other', 'kvroute.io/model'],
      ]),
    );
    expect(await fleet(url)).toEqual({});
    expect(((await (await fetch(`${url}/health`)).json()) as { discovery: { pods: { skipped: number } } }).discovery.pods.skipped).toBe(3);
    kube.put(enginePod(podOf(w0, { name: 'vllm-0', annotations: { 'kvroute.io/dp-size': '1', 'kvroute.io/kv-blocks': '2048', 'kvroute.io/model': MODEL } })));
    kube.delete('llm', 'vllm-1');
    kube.delete('llm', 'vllm-other');
    await settled(url, r);
    expect(Object.keys(await fleet(url))).toEqual(['llm/vllm-0']);
  });

  it('refuses at startup what cannot work: a missing namespace, no right to list pods, bad credentials, an unreadable kubeconfig, a selector the server refuses', async () => {
    const fails = (c: RouterConfigInput) =>
      createRouter(c).then(
        () => 'started',
        (err: Error) => err.message,
      );
    expect(await fails(config({ namespace: 'nowhere' }))).toBe("discovery.kubernetes.namespace: the namespace 'nowhere' does not exist");
    kube.forbidden.add('llm');
    expect(await fails(config())).toMatch(
      /^discovery\.kubernetes: the credentials of the kubeconfig .* may not list pods in the namespace 'llm' \(403; .*cannot list resource "pods"/,
    );
    kube.forbidden.clear();
    expect(await fails(config({ kubeconfig: kube.kubeconfig('llm', 'wrong') }))).toMatch(/refused the credentials .* \(401\)/);
    expect(await fails(config({ kubeconfig: '/nonexistent/kubeconfig' }))).toMatch(
      /^discovery\.kubernetes: cannot read the kubeconfig \/nonexistent\/kubeconfig: ENOENT/,
    );
    expect(await fails(config({ selector: 'app=vllm,tier in (a)' }))).toMatch(
      /refused the pod list with the selector 'app=vllm,tier in \(a\)' \(400\): unable to parse requirement/,
    );
    await expect(createRouter(config({ selector: 'app==' + 'x'.repeat(64) }))).rejects.toThrow(TypeError);
    await expect(createRouter(config({ selector: 'app in (a' }))).rejects.toThrow(
      "discovery.kubernetes.selector is not a label selector (unbalanced parentheses): 'app in (a'",
    );
  });

  it('starts when the API server cannot be reached yet, and takes the pods once it can', async () => {
    const w0 = await sim();
    kube.put(enginePod(podOf(w0, { name: 'vllm-0' })));
    const file = kube.kubeconfig();
    await kube.stop();
    const { router: r, url } = await router(config({ kubeconfig: file, startupTimeoutMs: 2000 }));
    expect((await complete(url)).status).toBe(503);
    expect(((await (await fetch(`${url}/health`)).json()) as { discovery: unknown }).discovery).toMatchObject({ connected: false, lastError: 'unreachable' });
    await kube.start();
    await settled(url, r);
    expect((await complete(url)).status).toBe(200);
    await settled(url, r);
  });
});
