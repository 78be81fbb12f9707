// createRouter(config): the library entry. A Router answers HttpCalls (see call/call.ts) independent of
// any HTTP server; the uWebSockets.js frontend and the adapters only translate to and from it.
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { Cancellation } from '../../util/cancellation.js';
import { markVerbatim } from '../../engines/json.js';
import { requestUsage, usageCounts, usageOf, wantsUsage } from '../../engines/usage.js';
import type { ChatTemplate } from '../../preprocess/chat-template.js';
import type { TextTokenizer } from '../../preprocess/types.js';
import { checkAdminAccess, handleAdmin } from '../fleet/admin.js';
import { handleDashboard, isDashboardPath } from '../dashboard/page.js';
import { MetricsHistory } from '../observability/metrics-history.js';
import { dashboardState } from './dashboard-state.js';
import type { Backend, DispatchRequest } from './backend.js';
import { collectBody } from '../call/body.js';
import { parseRouterConfig, type RouterConfig, type RouterConfigInput } from '../config/config.js';
import { completionToChat } from '../openai/chat.js';
import { errorReply, HttpError, notFound, type WorkerOf } from '../call/errors.js';
import { HealthMonitor } from '../fleet/health.js';
import { SSE_HEADERS, type HttpCall, type HttpReply } from '../call/call.js';
import { RouterMetrics } from '../observability/metrics.js';
import { loadTracing, tracingSettings, type RequestTracing, type Tracing } from '../observability/tracing.js';
import {
  parseJsonObject,
  parseRequestBody,
  parseRequestBodyOffThread,
  prepareRequest,
  requestIdOf,
  type OpenAiRoute,
  type PreparedRequest,
  type Preprocessor,
  type RequestBody,
} from '../openai/request.js';
import { failureCode, relayStream } from '../openai/relay.js';
import { WorkerRegistry } from '../fleet/registry.js';
import { copyFields, withFields } from '../../util/objects.js';
import { expectInteger, isShortVisibleAscii } from '../../util/validate.js';
import { levelEnabled, silentLogger, type Logger } from '../../util/logger.js';
import { expectedOutputTokens } from '../../routing/router-request.js';
import { RateLimitedError, type AccessControl, type Caller } from '../access/access.js';
import type { ApiKey } from '../access/api-keys.js';
import { loadAccess } from '../access/load.js';
import { FailureLog } from './failure-log.js';
import { InFlight } from './inflight.js';
import type { Discovery } from '../discovery/discovery.js';
import { loadPreprocessing } from './preprocessing.js';
import { drainCut, json, modelOf, modelsList, responseIdOf, withRequestId, within } from './replies.js';
import { healthSummary, type RouterStatus } from './health-summary.js';

export interface CreateRouterOptions {
  /** Tokenizer overriding config.tokenizer (e.g. an already loaded one). */
  tokenizer?: TextTokenizer;
  chatTemplate?: ChatTemplate;
  clock?: () => number;
  /**
   * Where the router logs: kvroute's own (`createLogger`), or any logger of pino's shape (Fastify's
   * `app.log`). Default: nothing is logged.
   */
  logger?: Logger;
  /** API keys of the OpenAI routes, besides those of config.apiKeysFile. */
  apiKeys?: readonly ApiKey[];
}

export interface DrainOptions {
  /** How long requests in flight may take to finish (default config.drainTimeoutMs). */
  timeoutMs?: number;
}

export interface DrainResult {
  /** Requests in flight when the drain began. */
  inFlight: number;
  /** Requests still running when the time ran out, ended at once (streams with an error frame). */
  cut: number;
  timedOut: boolean;
  ms: number;
  /** Requests still booked on any worker afterwards: 0 unless something leaked. */
  booked: number;
}

export interface Router {
  readonly config: RouterConfig;
  readonly metrics: RouterMetrics;
  readonly registry: WorkerRegistry;
  /** Answers one call; never rejects (failures become OpenAI-style error replies). */
  handle(call: HttpCall): Promise<HttpReply>;
  /** Whether the router serves this method and path (adapters pass others on). */
  serves(method: string, path: string): boolean;
  /** Ready: at least one worker can serve. */
  ready(): boolean;
  /** Runs one health round now (otherwise they run every config.health.intervalMs). */
  checkHealth(): Promise<void>;
  /** Drain began: /health answers 503, new requests get 503 with Retry-After and Connection: close. */
  readonly draining: boolean;
  /**
   * Stops taking requests (as `draining` says) and resolves once those in flight have finished,
   * streams to their end; when `timeoutMs` runs out first, the rest are cut (streams end with an
   * error frame, bookings are freed). Then close() the frontends and the router.
   */
  drain(o?: DrainOptions): Promise<DrainResult>;
  readonly log: Logger;
  close(): Promise<void>;
}

type RouteName = 'completions' | 'chat' | 'models' | 'route' | 'metrics' | 'health' | 'live';

/** openai: the routes API keys guard and a drain refuses. */
const ROUTES: Record<string, { method: string; name: RouteName; openai: boolean }> = {
  '/v1/completions': { method: 'POST', name: 'completions', openai: true },
  '/v1/chat/completions': { method: 'POST', name: 'chat', openai: true },
  '/v1/models': { method: 'GET', name: 'models', openai: true },
  '/v1/route': { method: 'POST', name: 'route', openai: true },
  '/metrics': { method: 'GET', name: 'metrics', openai: false },
  '/health': { method: 'GET', name: 'health', openai: false },
  '/live': { method: 'GET', name: 'live', openai: false },
};

export async function createRouter(input: RouterConfigInput = {}, opts: CreateRouterOptions = {}): Promise<Router> {
  const parsed = parseRouterConfig(input);
  const access = await loadAccess(parsed, opts.apiKeys, opts.clock);
  const config = copyFields(parsed);
  if (access.adminToken !== undefined) config.adminToken = access.adminToken;
  const { tokenizer, chatTemplate } = await loadPreprocessing(config, opts);
  const log = opts.logger ?? silentLogger;
  const metrics = new RouterMetrics();
  const { createBackend } = await import('./wiring.js');
  const tracing = await loadTracing(tracingSettings(config.tracing));
  const backend = await createBackend(config, { metrics, clock: opts.clock, log });
  // The router's own prefix cache (a tokenizer may serve several routers). The byte tokenizer gets
  // none: copying its ids out of a cache costs more than making them.
  const cached = config.tokenizerCacheBytes > 0 && tokenizer.name !== 'byte';
  const nativeTokenizer = cached ? tokenizer.native?.withPrefixCache(config.tokenizerCacheBytes) : undefined;
  const pre: Preprocessor = {
    tokenizer,
    nativeTokenizer,
    chatTemplate,
    models: config.models,
    sessionHeader: config.sessionAffinity?.header,
    maxTokensLimit: config.maxTokensLimit,
  };
  const router = new RouterImpl({ config, metrics, backend, pre, log, access: access.control, clock: opts.clock, tracing });
  const kubernetes = config.discovery?.kubernetes;
  if (kubernetes) {
    try {
      // Loaded only when configured: the Kubernetes client is large.
      const { startKubernetesDiscovery } = await import('../discovery/kubernetes.js');
      router.attachDiscovery(
        await startKubernetesDiscovery(kubernetes, { fleet: router.registry, models: config.models, log: log.child({ component: 'discovery' }) }),
      );
    } catch (err) {
      await router.close();
      throw err;
    }
  }
  return router;
}

/** Requests a cut stream or request may take to end before the drain returns anyway. */
const CUT_GRACE_MS = 2_000;

export interface RouterParts {
  config: RouterConfig;
  metrics: RouterMetrics;
  backend: Backend;
  pre: Preprocessor;
  log: Logger;
  access?: AccessControl;
  clock?: () => number;
  /** OpenTelemetry tracing, when it is on. */
  tracing?: Tracing;
}

export class RouterImpl implements Router {
  readonly config: RouterConfig;
  readonly metrics: RouterMetrics;
  readonly registry: WorkerRegistry;
  readonly log: Logger;
  private readonly backend: Backend;
  private readonly pre: Preprocessor;
  private readonly access?: AccessControl;
  private readonly tracing?: Tracing;
  private readonly health: HealthMonitor;
  private readonly inFlight = new InFlight();
  private readonly failures: FailureLog;
  private readonly workerOf: WorkerOf;
  /** The last minutes of the request path, for the live page. */
  private readonly history: MetricsHistory;
  private isDraining = false;
  private closed = false;
  private discovery?: Discovery;

  constructor(p: RouterParts) {
    const { config, metrics, backend, clock } = p;
    this.config = config;
    this.metrics = metrics;
    this.backend = backend;
    this.pre = p.pre;
    this.log = p.log;
    this.access = p.access;
    this.tracing = p.tracing;
    this.registry = new WorkerRegistry({
      pools: backend.pools,
      ingest: backend.ingest,
      healthGraceMs: config.health.blockGraceMs,
      clock,
      log: p.log.child({ component: 'fleet' }),
      onChange: backend.replicas && ((change) => backend.replicas!.fleetChanged(change)),
    });
    this.workerOf = (url) => this.registry.workerWithUrl(url);
    this.failures = new FailureLog(p.log, this.workerOf, clock);
    metrics.attach({
      ...backend.metricsSources,
      workerStates: () => this.registry.list().map((w) => ({ worker: w.id, role: w.role, state: w.state })),
      discoveryStats: () => this.discovery?.stats(),
      tokenizerCache: () => this.pre.nativeTokenizer?.prefixCacheStats(),
    });
    for (const w of config.workers) this.registry.add(w);
    // From here on the replicas' shared fleet applies (and the configured workers are not news).
    backend.replicas?.attachFleet(this.registry);
    // The configured workers are subscribed: a warm start now waits for their catch-up.
    backend.warmStart?.workersLoaded();
    this.health = new HealthMonitor(
      {
        targets: () => this.registry.healthTargets(),
        onResult: (id, ok, error, startTime) => this.registry.recordHealth(id, ok, error, startTime),
        onRound: () => this.registry.expireGrace(),
      },
      config.health.intervalMs,
      config.health.timeoutMs,
    );
    this.health.start();
    this.history = new MetricsHistory(() => metrics.totals());
    this.history.start();
  }

  /** Workers discovered from now on join the fleet; /health and /metrics report the discovery. */
  attachDiscovery(discovery: Discovery): void {
    this.discovery = discovery;
  }

  serves(_method: string, path: string): boolean {
    return ROUTES[path] !== undefined || path === '/admin' || path.startsWith('/admin/') || isDashboardPath(path);
  }

  ready(): boolean {
    return this.registry.canServe() && this.backend.canServe();
  }

  get draining(): boolean {
    return this.isDraining;
  }

  checkHealth(): Promise<void> {
    return this.health.checkAll();
  }

  async handle(call: HttpCall): Promise<HttpReply> {
    const reply = await this.answer(call);
    // Draining: the client should take its next request elsewhere.
    if (this.isDraining) reply.headers.connection = 'close';
    return reply;
  }

  private async answer(call: HttpCall): Promise<HttpReply> {
    const startedAt = performance.now();
    const path = call.url.split('?', 1)[0];
    const route = ROUTES[path];
    const label = route ? path : path.startsWith('/admin') ? '/admin' : isDashboardPath(path) ? '/dashboard' : 'other';
    try {
      if (isDashboardPath(path)) {
        // The live page's data has the admin API's access rules. With a token, the page itself (a
        // static file, no data) is served to anyone who reaches it: a browser cannot send the
        // bearer token on navigation; the page sends it from the URL's #token= fragment.
        if (this.config.adminToken === undefined || path.startsWith('/dashboard/state')) checkAdminAccess(call, this.config.adminToken);
        return this.counted(
          label,
          handleDashboard(call, path, () => this.dashboardState()),
        );
      }
      if (path === '/admin' || path.startsWith('/admin/')) {
        return this.counted(
          label,
          await handleAdmin(call, path, {
            registry: this.registry,
            scheduling: this.backend.scheduling,
            token: this.config.adminToken,
            readJson: (c) => this.readJson(c),
          }),
        );
      }
      if (!route) throw notFound(`no route ${call.method} ${path}`, 'unknown_route');
      if (call.method !== route.method && !(route.method === 'GET' && call.method === 'HEAD')) {
        throw new HttpError(405, 'invalid_request_error', 'method_not_allowed', `${path} takes ${route.method}, not ${call.method}`, { allow: route.method });
      }
      let caller: Caller | undefined;
      if (route.openai) {
        if (this.isDraining)
          throw new HttpError(503, 'service_unavailable', 'router_draining', 'the router is shutting down: send the request to another replica', {
            'retry-after': '1',
          });
        caller = this.access?.authenticate(call.headers.authorization);
      }
      switch (route.name) {
        case 'completions':
        case 'chat':
          return await this.openai(path as OpenAiRoute, call, startedAt, caller);
        case 'route':
          return this.counted(label, await this.routeQuery(call));
        case 'models':
          return this.counted(label, json(200, modelsList(this.config.models)));
        case 'metrics':
          return { status: 200, headers: { 'content-type': this.metrics.contentType }, body: await this.metrics.render() };
        case 'health':
          return this.counted(label, this.healthReply());
        case 'live':
          return json(200, { status: 'live' });
      }
    } catch (err) {
      // An OpenAI route's error before its body named a model (a bad request id, a key refused, a drain) counts as 'unknown'.
      return this.failed(label, err, call, route?.openai ? 'unknown' : undefined);
    }
  }

  private async openai(route: OpenAiRoute, call: HttpCall, startedAt: number, caller: Caller | undefined): Promise<HttpReply> {
    const requestId = requestIdOf(call.headers['x-request-id']);
    const trace = this.tracing?.request(call.method, route, call.headers, requestId, startedAt);
    const entry = this.inFlight.begin();
    const controller = new Cancellation();
    // A drain that ran out of time ends a request still waiting for its engine with a 503.
    let cut: HttpError | undefined;
    entry.onCut(() => {
      cut = drainCut();
      controller.abort();
    });
    let streaming = false;
    let model = 'unknown';
    try {
      let bytes: Uint8Array;
      let prepared: PreparedRequest;
      try {
        bytes = await this.readBody(call);
        const readAt = trace ? performance.now() : 0;
        const parsed = bytes.byteLength >= this.config.offThreadPromptBytes ? await this.readOffThread(route, bytes) : parseRequestBody(route, bytes, this.pre);
        prepared = prepareRequest(route, parsed.json, call.headers, this.pre, parsed.scanned);
        model = modelOf(prepared);
        trace?.preprocessed(readAt, { model, stream: prepared.stream, promptTokens: prepared.tokens.length, kind: parsed.scanned?.kind ?? 'json' });
        if (!this.ready()) {
          throw new HttpError(503, 'service_unavailable', 'no_eligible_worker', 'no worker can serve requests right now', { 'retry-after': '1' });
        }
        if (caller) this.admit(caller, prepared);
      } catch (err) {
        throw withRequestId(err, requestId);
      }
      // The router asks engines for usage (token metrics); the relay drops it if the client did not.
      const clientWantsUsage = wantsUsage(prepared.body);
      if (prepared.stream && !clientWantsUsage) requestUsage(prepared.body);
      // Unchanged and valid UTF-8 (the parse replaced any invalid byte): engines get the client's bytes.
      else if (prepared.verbatim && isUtf8(bytes)) markVerbatim(prepared.body, bytes);

      const onClientGone = () => controller.abort();
      call.signal?.addEventListener('abort', onClientGone, { once: true });
      if (call.signal?.aborted) controller.abort();
      this.metrics.frontend((performance.now() - startedAt) * 1000);
      let routed;
      try {
        const request: DispatchRequest = {
          route: prepared.engineRoute,
          body: prepared.body,
          tokens: prepared.tokens,
          requestId,
          hints: prepared.hints,
          signal: controller.signal,
        };
        if (trace) request.trace = trace;
        routed = await this.backend.dispatch(request);
      } catch (err) {
        call.signal?.removeEventListener('abort', onClientGone);
        if (cut) throw withRequestId(cut, requestId);
        if (call.signal?.aborted) this.metrics.clientDisconnect();
        throw withRequestId(err, requestId);
      }
      const idHeader = { 'x-request-id': requestId };
      if (routed.stream) {
        const relay = relayStream(routed.stream, {
          route,
          model,
          trace: trace?.relay(),
          chat: prepared.chatAsCompletions,
          clientWantsUsage,
          startedAt,
          metrics: this.metrics,
          abort: () => controller.abort(),
          workerOf: this.workerOf,
          onEnd: (status, usage, failure) => {
            call.signal?.removeEventListener('abort', onClientGone);
            const failed = status >= 500 ? errorReply(failure, this.workerOf) : undefined;
            if (failed) this.failures.record(requestId, route, failed, failure, trace?.traceId);
            trace?.end(status, failure === undefined ? { usage } : { usage, code: failureCode(failure, this.workerOf) });
            this.debugLine(requestId, route, status, routed.headers, caller, startedAt, trace?.traceId);
          },
          onConsumed: () => entry.done(),
        });
        entry.onCut(() => relay.interrupt(drainCut()));
        streaming = true;
        return { status: routed.status, headers: withFields(routed.headers, idHeader, SSE_HEADERS), stream: relay };
      }
      call.signal?.removeEventListener('abort', onClientGone);
      const out = prepared.chatAsCompletions ? completionToChat(routed.body) : routed.body;
      const usage = usageOf(routed.body);
      const counts = usage && usageCounts(usage);
      if (counts) this.metrics.usage(counts.promptTokens, counts.completionTokens, counts.cachedTokens ?? 0);
      // The answer came, but its client had left: it is never written.
      const gone = call.signal?.aborted === true;
      if (gone) this.metrics.clientDisconnect();
      const status = gone ? 499 : routed.status;
      this.metrics.request(route, status, model);
      if (status === 200) this.metrics.answered(route, model, false, (performance.now() - startedAt) / 1000);
      trace?.end(status, { usage: counts, responseId: responseIdOf(out) });
      this.debugLine(requestId, route, status, routed.headers, caller, startedAt, trace?.traceId);
      return { status: routed.status, headers: withFields(routed.headers, idHeader, { 'content-type': 'application/json' }), body: JSON.stringify(out) };
    } catch (err) {
      return this.failed(route, err, call, model, trace);
    } finally {
      if (!streaming) entry.done();
    }
  }

  /**
   * A long body read, rendered and tokenized on a libuv thread. Nothing is booked until it is
   * back; a client that left meanwhile (or a drain that cut the request) is refused by dispatch
   * before any routing, as for one that left during the body's upload.
   */
  private readOffThread(route: OpenAiRoute, bytes: Uint8Array): Promise<RequestBody> {
    this.metrics.offThreadRead();
    return parseRequestBodyOffThread(route, bytes, this.pre);
  }

  /** Takes the request from its key's limits (429 when over them); counted per key name. */
  private admit(caller: Caller, prepared: PreparedRequest): void {
    const tokens = prepared.tokens.length + (expectedOutputTokens(prepared.body) ?? 0);
    try {
      this.access!.admit(caller, tokens);
    } catch (err) {
      this.metrics.apiKeyRequest(caller.name, err instanceof RateLimitedError ? `rate_limited_${err.limit}` : 'too_large', 0);
      throw err;
    }
    this.metrics.apiKeyRequest(caller.name, 'admitted', tokens);
  }

  /** One line per request, at debug level only (nothing per request at info). */
  private debugLine(
    requestId: string,
    route: string,
    status: number,
    headers: Record<string, string>,
    caller: Caller | undefined,
    startedAt: number,
    traceId: string | undefined,
  ): void {
    if (!levelEnabled(this.log, 'debug')) return;
    this.log.debug(
      {
        request_id: requestId,
        trace_id: traceId,
        route,
        status,
        mode: headers['x-kvroute-mode'],
        prefill_worker: headers['x-kvroute-prefill-worker'],
        decode_worker: headers['x-kvroute-decode-worker'],
        overlap_blocks: headers['x-kvroute-overlap-blocks'],
        key: caller?.name,
        ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
      },
      'request',
    );
  }

  /** POST /v1/route: the same preprocessing as a real request, then a query that books nothing. */
  private async routeQuery(call: HttpCall): Promise<HttpReply> {
    const requestId = requestIdOf(call.headers['x-request-id']);
    let explanation: unknown;
    try {
      const body = await this.readJson(call);
      const route: OpenAiRoute = body.messages !== undefined ? '/v1/chat/completions' : '/v1/completions';
      const prepared = prepareRequest(route, body, call.headers, this.pre);
      explanation = this.backend.explain(prepared.tokens, prepared.hints, requestId);
    } catch (err) {
      throw withRequestId(err, requestId);
    }
    return { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': requestId }, body: JSON.stringify(explanation) };
  }

  private dashboardState() {
    return dashboardState({ config: this.config, registry: this.registry, backend: this.backend, history: this.history, status: () => this.status() });
  }

  /** Warming: requests are served (on the restored index as far as it caught up), but a load balancer should wait before sending its share. */
  private status(): RouterStatus {
    return this.isDraining ? 'draining' : !this.ready() ? 'unavailable' : this.backend.warmStart?.ready() === false ? 'warming' : 'ready';
  }

  private healthReply(): HttpReply {
    const summary = healthSummary({ status: this.status(), registry: this.registry, backend: this.backend, discovery: this.discovery });
    return json(summary.status === 'ready' ? 200 : 503, summary);
  }

  private async readJson(call: HttpCall): Promise<Record<string, unknown>> {
    return parseJsonObject(await this.readBody(call));
  }

  private readBody(call: HttpCall): Promise<Uint8Array> {
    return collectBody(call.body, this.config.maxBodyBytes, call.headers['content-length']);
  }

  private counted(label: string, reply: HttpReply): HttpReply {
    this.metrics.request(label, reply.status);
    return reply;
  }

  /** An error answer; an OpenAI request's (`model` known or 'unknown') is counted by its code and ends its span. */
  private failed(label: string, err: unknown, call: HttpCall, model?: string, trace?: RequestTracing): HttpReply {
    const r = errorReply(err, this.workerOf);
    if (r.status === 429 && !(err instanceof HttpError)) this.metrics.backpressureRefusal();
    this.metrics.request(label, r.status, model);
    if (model !== undefined || trace) {
      const { code, message } = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
      if (model !== undefined) this.metrics.error(label, model, r.status, code);
      trace?.end(r.status, { code, message });
    }
    const headers: Record<string, string> = copyFields(r.headers);
    const id = (err as { requestId?: unknown } | null)?.requestId ?? call.headers['x-request-id'];
    if (isShortVisibleAscii(id)) headers['x-request-id'] = id;
    if (r.status >= 500) this.failures.record(isShortVisibleAscii(id) ? id : undefined, label, r, err, trace?.traceId);
    return { status: r.status, headers, body: r.body };
  }

  async drain(o: DrainOptions = {}): Promise<DrainResult> {
    const timeoutMs = o.timeoutMs === undefined ? this.config.drainTimeoutMs : expectInteger(o.timeoutMs, 'timeoutMs', 0, 86_400_000);
    const startedAt = performance.now();
    const inFlight = this.inFlight.size;
    if (!this.isDraining) {
      this.isDraining = true;
      this.log.info({ in_flight: inFlight, timeout_ms: timeoutMs }, 'draining: /health answers 503, new requests get 503 with Retry-After');
    }
    const timedOut = !(await within(this.inFlight.idle(), timeoutMs));
    let cut = 0;
    if (timedOut) {
      cut = this.inFlight.cutAll();
      this.log.warn({ cut, timeout_ms: timeoutMs }, 'drain timeout: requests still in flight were cut (streams end with an error frame)');
      await within(this.inFlight.idle(), CUT_GRACE_MS);
    }
    // Let the frontends write what they pulled last (the end of each stream) before anything closes.
    await new Promise((resolve) => setImmediate(resolve));
    const booked = this.backend.metricsSources.workerLoads().reduce((n, l) => n + l.requests, 0);
    const result = { inFlight, cut, timedOut, ms: Math.round(performance.now() - startedAt), booked };
    this.log.info(result, 'drained');
    return result;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.discovery?.close();
    this.history.stop();
    await this.health.close();
    await this.backend.close();
    // Spans still buffered are sent before the router is gone.
    await this.tracing?.shutdown();
  }
}
