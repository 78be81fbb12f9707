// Kubernetes discovery: the pods a label selector picks in one namespace, followed with
// @kubernetes/client-node's ListWatch (a list, then a watch from its resourceVersion) and fed to
// DiscoveredFleet. The only module that loads the client; app/ imports it only when discovery is
// configured. A failed list or watch keeps the last known fleet and is tried again with backoff:
// from the last resourceVersion, or (410 Gone) by a fresh list that ListWatch reconciles against
// what it held (pods gone from it are deleted, the rest kept).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, ListWatch, Watch, type V1Pod } from '@kubernetes/client-node';
import type { KubernetesDiscoveryConfig } from '../config/config.js';
import type { DiscoveryStatsSample } from '../observability/discovery-metrics.js';
import { redactUrl, type Logger } from '../../util/logger.js';
import { withFields } from '../../util/objects.js';
import { DiscoveredFleet, type DiscoveryFleetPort } from './discovered-fleet.js';
import type { Discovery, DiscoveryStatus } from './discovery.js';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubernetesDiscoveryDeps {
  fleet: DiscoveryFleetPort;
  models: readonly string[];
  log: Logger;
}

/** The API server, how it was found, and the namespace to watch. */
interface Target {
  kc: KubeConfig;
  from: string;
  namespace: string;
}

/** Startup refusals: the configuration cannot work as it is. */
export class DiscoveryConfigError extends Error {
  override name = 'DiscoveryConfigError';
}

export async function startKubernetesDiscovery(s: KubernetesDiscoveryConfig, deps: KubernetesDiscoveryDeps): Promise<Discovery> {
  const d = new KubernetesDiscovery(s, deps, findTarget(s, process.env));
  try {
    await d.start();
  } catch (err) {
    await d.close();
    throw err;
  }
  return d;
}

class KubernetesDiscovery implements Discovery {
  private readonly fleet: DiscoveredFleet;
  private readonly api: CoreV1Api;
  private readonly informer: ListWatch<V1Pod>;
  private readonly log: Logger;
  private connected = false;
  private disconnectedSince: number | undefined = Date.now();
  private lastError: string | undefined;
  private failures = 0;
  private lists = 0;
  private errors = 0;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  /** The first failure while starting: refused configurations stop the startup. */
  private startupError: unknown;
  private starting = true;

  constructor(
    private readonly s: KubernetesDiscoveryConfig,
    deps: KubernetesDiscoveryDeps,
    private readonly target: Target,
  ) {
    this.log = deps.log;
    this.fleet = new DiscoveredFleet({ fleet: deps.fleet, models: deps.models, log: deps.log, source: 'kubernetes' });
    this.api = target.kc.makeApiClient(CoreV1Api);
    const namespace = target.namespace;
    const listFn = async () => {
      const list = await this.api.listNamespacedPod({ namespace, labelSelector: s.selector });
      this.lists++;
      this.reached();
      return list;
    };
    const watch = new ObservedWatch(target.kc, s.watchTimeoutSeconds, () => this.reached());
    this.informer = new ListWatch<V1Pod>(`/api/v1/namespaces/${namespace}/pods`, watch, listFn, false, s.selector);
    this.informer.on('add', (pod) => this.fleet.upsert(pod));
    this.informer.on('update', (pod) => this.fleet.upsert(pod));
    this.informer.on('delete', (pod) => this.fleet.delete(pod));
    this.informer.on('error', (err) => this.failed(err));
  }

  async start(): Promise<void> {
    const { namespace } = this.target;
    await this.checkNamespace();
    let timer: NodeJS.Timeout | undefined;
    const started = this.informer.start().then(() => true);
    const waited =
      this.s.startupTimeoutMs === 0
        ? false
        : await Promise.race([started, new Promise<false>((r) => (timer = setTimeout(() => r(false), this.s.startupTimeoutMs)))]);
    clearTimeout(timer);
    this.starting = false;
    if (this.startupError !== undefined && refusal(this.startupError))
      throw new DiscoveryConfigError(refusalMessage(this.startupError, this.target, this.s.selector));
    const fields = {
      namespace,
      selector: this.s.selector,
      api_server: redactUrl(this.target.kc.getCurrentCluster()?.server ?? ''),
      credentials: this.target.from,
    };
    if (this.connected) this.log.info(withFields(fields, this.fleet.counts()), 'discovery: watching pods');
    else
      this.log.warn(
        withFields(fields, { waited_ms: waited ? undefined : this.s.startupTimeoutMs, err: this.startupError }),
        'discovery: the API server cannot be reached yet; starting without discovered workers and trying again',
      );
  }

  status(): DiscoveryStatus {
    const c = this.fleet.counts();
    const out: DiscoveryStatus = {
      source: 'kubernetes',
      namespace: this.target.namespace,
      selector: this.s.selector,
      connected: this.connected,
      pods: { ready: c.ready, notReady: c.notReady, waiting: c.waiting, skipped: c.skipped },
    };
    if (!this.connected) {
      if (this.disconnectedSince !== undefined) out.disconnectedSince = this.disconnectedSince;
      if (this.lastError !== undefined) out.lastError = this.lastError;
    }
    return out;
  }

  stats(): DiscoveryStatsSample {
    const c = this.fleet.counts();
    return {
      connected: this.connected,
      pods: { ready: c.ready, notReady: c.notReady, waiting: c.waiting, skipped: c.skipped },
      added: c.added,
      removed: c.removed,
      restarted: c.restarted,
      lists: this.lists,
      errors: this.errors,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.informer.stop();
  }

  /** The namespace exists (where the credentials may read it: a Role on pods alone cannot, and that is fine). */
  private async checkNamespace(): Promise<void> {
    try {
      await this.api.readNamespace({ name: this.target.namespace });
    } catch (err) {
      if (statusOf(err) === 404) throw new DiscoveryConfigError(`discovery.kubernetes.namespace: the namespace '${this.target.namespace}' does not exist`);
      if (statusOf(err) === 401 || !(statusOf(err) !== undefined || isNetworkError(err)))
        throw new DiscoveryConfigError(refusalMessage(err, this.target, this.s.selector));
      // 403 (no right to read namespaces) or unreachable: the list says more.
    }
  }

  private reached(): void {
    this.failures = 0;
    if (this.connected) return;
    const outage = this.disconnectedSince;
    this.connected = true;
    this.disconnectedSince = undefined;
    this.lastError = undefined;
    if (!this.starting)
      this.log.info(
        { down_ms: outage === undefined ? undefined : Date.now() - outage, ...this.fleet.counts() },
        'discovery: the API server is reachable again',
      );
  }

  private failed(err: unknown): void {
    if (this.closed) return;
    this.errors++;
    if (this.starting) this.startupError ??= err;
    const kind = errorKind(err);
    if (this.connected || this.lastError === undefined) {
      this.disconnectedSince ??= Date.now();
      if (!this.starting)
        this.log.warn({ err, error: kind, workers: this.fleet.counts() }, 'discovery: list or watch failed; routing on the last known fleet and trying again');
    }
    this.connected = false;
    this.lastError = kind;
    if (this.starting && refusal(err)) return;
    const wait = Math.min(this.s.retryMaxMs, this.s.retryBaseMs * 2 ** Math.min(this.failures, 20));
    this.failures++;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      if (!this.closed) void this.informer.start();
    }, wait);
    this.retry.unref();
  }
}

/**
 * ListWatch's watch, asking for bookmarks (they move the resourceVersion on, so a re-watch after a
 * quiet spell is not told 410 Gone) and for the server to end each watch after a while (a dead
 * connection is noticed); every answered watch and every event counts as reaching the server.
 */
class ObservedWatch extends Watch {
  constructor(
    config: KubeConfig,
    private readonly timeoutSeconds: number,
    private readonly onReached: () => void,
  ) {
    super(config);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: any) => void,
  ): Promise<AbortController> {
    let failed = false;
    const params = Object.assign({}, queryParams, { allowWatchBookmarks: true, timeoutSeconds: this.timeoutSeconds });
    const controller = await super.watch(
      path,
      params,
      (phase, obj, raw) => {
        this.onReached();
        callback(phase, obj, raw);
      },
      (err) => {
        if (err) failed = true;
        done(err);
      },
    );
    if (!failed) this.onReached();
    return controller;
  }
}

/** Where the credentials come from: the setting, $KUBECONFIG, the pod's service account, ~/.kube/config. */
function findTarget(s: KubernetesDiscoveryConfig, env: NodeJS.ProcessEnv): Target {
  const kc = new KubeConfig();
  let from: string;
  let namespace: string | undefined;
  const home = join(homedir(), '.kube', 'config');
  try {
    if (s.kubeconfig !== undefined) {
      from = `kubeconfig ${s.kubeconfig}`;
      kc.loadFromFile(s.kubeconfig);
    } else if (env.KUBECONFIG) {
      from = `KUBECONFIG ${env.KUBECONFIG}`;
      // Several files separated by ':' are merged, as kubectl does.
      const [first, ...more] = env.KUBECONFIG.split(':').filter((f) => f !== '');
      kc.loadFromFile(first);
      for (const f of more) {
        const other = new KubeConfig();
        other.loadFromFile(f);
        kc.mergeConfig(other);
      }
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) {
      from = 'the service account of this pod';
      kc.loadFromCluster();
      namespace = readFileSync(join(SERVICE_ACCOUNT_DIR, 'namespace'), 'utf8').trim();
    } else if (existsSync(home)) {
      from = `kubeconfig ${home}`;
      kc.loadFromFile(home);
    } else {
      throw new DiscoveryConfigError(
        'discovery.kubernetes: no credentials for the API server: set KUBECONFIG (or discovery.kubernetes.kubeconfig), or run the router in a pod with a service account',
      );
    }
  } catch (err) {
    if (err instanceof DiscoveryConfigError) throw err;
    throw new DiscoveryConfigError(`discovery.kubernetes: cannot read the ${from!}: ${(err as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new DiscoveryConfigError(`discovery.kubernetes: the ${from} names no current context with a cluster and its server`);
  namespace = s.namespace ?? namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  return { kc, from, namespace };
}

function statusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  const code = typeof e?.code === 'number' ? e.code : typeof e?.statusCode === 'number' ? e.statusCode : undefined;
  return code;
}

/** Refused for good at startup: the credentials, the rights, the selector, or a client-side refusal (TLS, the kubeconfig's contents). */
function refusal(err: unknown): boolean {
  const status = statusOf(err);
  if (status === undefined) return !isNetworkError(err);
  return status === 400 || status === 401 || status === 403 || status === 404;
}

/** Errors of reaching the server (tried again), as node-fetch and Node report them. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

function isNetworkError(err: unknown): boolean {
  const e = err as { code?: unknown; type?: unknown; name?: unknown } | null;
  return (typeof e?.code === 'string' && NETWORK_CODES.has(e.code)) || e?.type === 'aborted' || e?.type === 'request-timeout' || e?.name === 'AbortError';
}

function refusalMessage(err: unknown, t: Target, selector: string): string {
  const status = statusOf(err);
  const said = serverMessage(err);
  const detail = said ? `: ${said}` : '';
  if (status === 401) return `discovery.kubernetes: the API server refused the credentials of the ${t.from} (401)${detail}`;
  if (status === 403)
    return `discovery.kubernetes: the credentials of the ${t.from} may not list pods in the namespace '${t.namespace}' (403; the router needs get, list and watch on pods there)${detail}`;
  if (status === 404) return `discovery.kubernetes: the API server has no pods of the namespace '${t.namespace}' (404)${detail}`;
  if (status === undefined) return `discovery.kubernetes: cannot use the API server of the ${t.from}: ${(err as Error | null)?.message ?? String(err)}`;
  return `discovery.kubernetes: the API server refused the pod list with the selector '${selector}' (${status})${detail}`;
}

/** The message of a Kubernetes Status body, when the error carries one. */
function serverMessage(err: unknown): string | undefined {
  let body = (err as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (body as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message.slice(0, 500) : undefined;
}

/** A failure as a kind, for /health (no addresses). */
function errorKind(err: unknown): string {
  const status = statusOf(err);
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status !== undefined && status >= 100) return `http_${status}`;
  const code = (err as { code?: unknown; type?: unknown } | null)?.code;
  if (code === 'ERR_STREAM_PREMATURE_CLOSE' || (err as { type?: unknown } | null)?.type === 'aborted') return 'watch_cut';
  return 'unreachable';
}
