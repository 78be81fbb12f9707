// A scripted Kubernetes API server on 127.0.0.1 for the discovery tests: the pods of some
// namespaces, listed (a PodList with its resourceVersion) and watched (newline-delimited watch
// events from a resourceVersion, BOOKMARK events when asked for, ERROR 410 Gone for a
// resourceVersion older than the history kept), bearer token auth, forbidden namespaces, and the
// faults the tests script: watches cut mid-stream, history compacted, the server down and back.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakePod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec: { containers: Array<{ name: string; ports?: Array<{ name?: string; containerPort: number; protocol?: string }> }> };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; restartCount: number; containerID?: string; ready?: boolean }>;
  };
}

interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  pod: FakePod;
}

interface Watcher {
  namespace: string;
  selector: Record<string, string>;
  res: ServerResponse;
  bookmarks: boolean;
}

export interface RequestSeen {
  path: string;
  query: Record<string, string>;
}

export class FakeKube {
  readonly token = 'fake-token';
  readonly pods = new Map<string, FakePod>();
  readonly namespaces = new Set<string>(['default', 'llm']);
  readonly forbidden = new Set<string>();
  readonly requests: RequestSeen[] = [];
  private rv = 100;
  private history: WatchEvent[] = [];
  /** Watches from a resourceVersion below this get 410 Gone. */
  private oldestRv = 100;
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** The server goes away: every connection is cut, new ones are refused. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.watchers.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** An API server restart: down, then up on the same port with its watch history gone (older resourceVersions get 410). */
  async restart(): Promise<void> {
    await this.stop();
    this.compact();
    await this.start();
  }

  /** Cuts every watch mid-stream (the connection reset, no end of the chunked body). */
  cutWatches(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  /** Forgets the watch history: a watch from any earlier resourceVersion gets 410 Gone. */
  compact(): void {
    this.history = [];
    this.oldestRv = this.rv;
  }

  /** A BOOKMARK to every watch that asked for them, at the current resourceVersion. */
  bookmark(): void {
    for (const w of this.watchers)
      if (w.bookmarks) this.write(w, { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } });
  }

  get resourceVersion(): number {
    return this.rv;
  }

  watchCount(): number {
    return this.watchers.size;
  }

  lists(): number {
    return this.requests.filter((r) => r.path.endsWith('/pods') && r.query.watch !== 'true').length;
  }

  watches(): RequestSeen[] {
    return this.requests.filter((r) => r.query.watch === 'true');
  }

  /** Adds or changes a pod (a new resourceVersion, an event to the watches). */
  put(pod: FakePod): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const type = this.pods.has(key) ? 'MODIFIED' : 'ADDED';
    const stored = structuredClone(pod);
    stored.metadata.resourceVersion = String(++this.rv);
    this.pods.set(key, stored);
    this.emit({ rv: this.rv, type, pod: stored });
  }

  delete(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const pod = this.pods.get(key);
    if (!pod) throw new Error(`no pod ${key}`);
    this.pods.delete(key);
    const gone = structuredClone(pod);
    gone.metadata.resourceVersion = String(++this.rv);
    this.emit({ rv: this.rv, type: 'DELETED', pod: gone });
  }

  /** A kubeconfig file pointing at this server (token auth, the context's namespace). */
  kubeconfig(namespace = 'llm', token = this.token): string {
    const dir = mkdtempSync(join(tmpdir(), 'kvroute-kube-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake\n  cluster:\n    server: http://127.0.0.1:${this.port}\n    insecure-skip-tls-verify: true`,
        'users:',
        `- name: tester\n  user:\n    token: ${token}`,
        'contexts:',
        `- name: fake\n  context:\n    cluster: fake\n    user: tester\n    namespace: ${namespace}`,
        'current-context: fake',
        '',
      ].join('\n'),
    );
    return file;
  }

  private emit(ev: WatchEvent): void {
    this.history.push(ev);
    for (const w of this.watchers) this.send(w, ev);
  }

  private send(w: Watcher, ev: WatchEvent): void {
    if (ev.pod.metadata.namespace !== w.namespace || !matches(ev.pod, w.selector)) return;
    this.write(w, { type: ev.type, object: ev.pod });
  }

  private write(w: Watcher, event: unknown): void {
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const query = Object.fromEntries(url.searchParams);
    this.requests.push({ path: url.pathname, query });
    if (req.headers.authorization !== `Bearer ${this.token}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
    const ns = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(url.pathname);
    if (ns) {
      if (!this.namespaces.has(ns[1])) return status(res, 404, 'NotFound', `namespaces "${ns[1]}" not found`);
      return json(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: ns[1] } });
    }
    const pods = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    if (!pods) return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const namespace = pods[1];
    if (this.forbidden.has(namespace)) {
      return status(
        res,
        403,
        'Forbidden',
        `pods is forbidden: User "system:serviceaccount:${namespace}:kvroute" cannot list resource "pods" in API group "" in the namespace "${namespace}"`,
      );
    }
    let selector: Record<string, string>;
    try {
      selector = parseSelector(query.labelSelector ?? '');
    } catch (err) {
      return status(res, 400, 'BadRequest', (err as Error).message);
    }
    if (query.watch !== 'true') {
      const items = [...this.pods.values()].filter((p) => p.metadata.namespace === namespace && matches(p, selector));
      return json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
    }
    const from = Number(query.resourceVersion ?? '0');
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // The API server answers a watch at once, events follow.
    res.flushHeaders();
    if (from < this.oldestRv) {
      res.end(
        `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${from} (${this.oldestRv})`, reason: 'Expired', code: 410 } })}\n`,
      );
      return;
    }
    const w: Watcher = { namespace, selector, res, bookmarks: query.allowWatchBookmarks === 'true' };
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
    for (const ev of this.history) if (ev.rv > from) this.send(w, ev);
    const timeout = Number(query.timeoutSeconds ?? '0');
    if (timeout > 0) {
      const t = setTimeout(() => res.end(), timeout * 1000);
      res.on('close', () => clearTimeout(t));
    }
  }
}

/** Equality requirements only (`a=b,c==d`): what the tests use. */
function parseSelector(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (s === '') return out;
  for (const part of s.split(',')) {
    const m = /^([^=!]+)==?(.*)$/.exec(part);
    if (!m) throw new Error(`unable to parse requirement: ${part}`);
    out[m[1]] = m[2];
  }
  return out;
}

function matches(pod: FakePod, selector: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v);
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

export interface PodSpec {
  name: string;
  namespace?: string;
  uid?: string;
  ip?: string;
  ready?: boolean;
  httpPort?: number;
  eventsPort?: number;
  replayPort?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  restartCount?: number;
  containerId?: string;
  terminating?: boolean;
}

/** A vLLM-like engine pod selected by app=vllm. */
export function enginePod(p: PodSpec): FakePod {
  const ports: Array<{ name?: string; containerPort: number }> = [];
  if (p.httpPort !== undefined) ports.push({ name: 'http', containerPort: p.httpPort });
  if (p.eventsPort !== undefined) ports.push({ name: 'kv-events', containerPort: p.eventsPort });
  if (p.replayPort !== undefined) ports.push({ name: 'kv-replay', containerPort: p.replayPort });
  return {
    metadata: {
      name: p.name,
      namespace: p.namespace ?? 'llm',
      uid: p.uid ?? `uid-${p.name}`,
      labels: { app: 'vllm', ...p.labels },
      ...(p.annotations ? { annotations: p.annotations } : {}),
      ...(p.terminating ? { deletionTimestamp: new Date().toISOString() } : {}),
    },
    spec: { containers: [{ name: 'engine', ports }] },
    status: {
      phase: 'Running',
      ...(p.ip ? { podIP: p.ip } : {}),
      conditions: [{ type: 'Ready', status: p.ready === false ? 'False' : 'True' }],
      containerStatuses: [
        { name: 'engine', restartCount: p.restartCount ?? 0, containerID: p.containerId ?? `containerd://${p.name}-0`, ready: p.ready !== false },
      ],
    },
  };
}
