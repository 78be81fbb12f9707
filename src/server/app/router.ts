// createRouter(config): the library entry. A Router answers HttpCalls (see call/call.ts) independent of
// any HTTP server; the uWebSockets.js frontend and the adapters only translate to and from it.
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { Cancellation } from '../../util/cancellation.js';
import { markVerbatim } from '../../engines/json.js';
import { requestUsage, usageCounts, usageOf, wantsUsage } from '../../engines/usage.js';
import { CHATML_TEMPLATE, ChatTemplate } from '../../preprocess/chat-template.js';
import type { TextTokenizer } from '../../preprocess/types.js';
import { handleAdmin } from '../fleet/admin.js';
import type { Backend } from './backend.js';
import { collectBody } from '../call/body.js';
import { parseRouterConfig, type RouterConfig, type RouterConfigInput } from '../config/config.js';
import { completionToChat } from '../openai/chat.js';
import { errorReply, HttpError, notFound } from '../call/errors.js';
import { HealthMonitor } from '../fleet/health.js';
import { SSE_HEADERS, type HttpCall, type HttpReply } from '../call/call.js';
import { RouterMetrics } from '../observability/metrics.js';
import { parseJsonObject, parseRequestBody, prepareRequest, requestIdOf, type OpenAiRoute, type PreparedRequest, type Preprocessor } from '../openai/request.js';
import { relayStream } from '../openai/relay.js';
import { WorkerRegistry } from '../fleet/registry.js';
import { copyFields, withFields } from '../../util/objects.js';
import { isShortVisibleAscii } from '../../util/validate.js';

export interface CreateRouterOptions {
  /** Tokenizer overriding config.tokenizer (e.g. an already loaded one). */
  tokenizer?: TextTokenizer;
  chatTemplate?: ChatTemplate;
  clock?: () => number;
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
  close(): Promise<void>;
}

type RouteName = 'completions' | 'chat' | 'models' | 'route' | 'metrics' | 'health' | 'live';

const ROUTES: Record<string, { method: string; name: RouteName }> = {
  '/v1/completions': { method: 'POST', name: 'completions' },
  '/v1/chat/completions': { method: 'POST', name: 'chat' },
  '/v1/models': { method: 'GET', name: 'models' },
  '/v1/route': { method: 'POST', name: 'route' },
  '/metrics': { method: 'GET', name: 'metrics' },
  '/health': { method: 'GET', name: 'health' },
  '/live': { method: 'GET', name: 'live' },
};

export async function createRouter(input: RouterConfigInput = {}, opts: CreateRouterOptions = {}): Promise<Router> {
  const config = parseRouterConfig(input);
  const { tokenizer, chatTemplate } = await loadPreprocessing(config, opts);
  const metrics = new RouterMetrics();
  const { createBackend } = await import('./wiring.js');
  const backend = await createBackend(config, { metrics, clock: opts.clock });
  return new RouterImpl(config, metrics, backend, { tokenizer, chatTemplate, models: config.models, sessionHeader: config.sessionAffinity?.header }, opts.clock);
}

async function loadPreprocessing(config: RouterConfig, opts: CreateRouterOptions): Promise<{ tokenizer: TextTokenizer; chatTemplate: ChatTemplate }> {
  let tokenizer = opts.tokenizer;
  let specialTokens: Record<string, string> = {};
  let modelTemplate: ChatTemplate | undefined;
  if (!tokenizer) {
    if (config.tokenizer.type === 'byte') {
      tokenizer = (await import('../../preprocess/byte-tokenizer.js')).byteTokenizer;
    } else {
      const hf = await (await import('../../preprocess/hf-tokenizer.js')).loadHfTokenizer(config.tokenizer.path);
      tokenizer = hf;
      specialTokens = hf.specialTokens;
      modelTemplate = hf.chatTemplate;
    }
  }
  // A configured template overrides the model's, with the model's special tokens.
  const configured = config.chatTemplate ? new ChatTemplate(config.chatTemplate, specialTokens) : undefined;
  return { tokenizer, chatTemplate: opts.chatTemplate ?? configured ?? modelTemplate ?? new ChatTemplate(CHATML_TEMPLATE) };
}

export class RouterImpl implements Router {
  readonly registry: WorkerRegistry;
  private readonly health: HealthMonitor;
  private closed = false;

  constructor(
    readonly config: RouterConfig,
    readonly metrics: RouterMetrics,
    private readonly backend: Backend,
    private readonly pre: Preprocessor,
    clock?: () => number,
  ) {
    this.registry = new WorkerRegistry({
      pools: backend.pools,
      ingest: backend.ingest,
      healthGraceMs: config.health.blockGraceMs,
      clock,
    });
    metrics.attach({
      ...backend.metricsSources,
      workerStates: () => this.registry.list().map((w) => ({ worker: w.id, role: w.role, state: w.state })),
    });
    for (const w of config.workers) this.registry.add(w);
    this.health = new HealthMonitor(
      {
        targets: () => this.registry.healthTargets(),
        onResult: (id, ok, error) => this.registry.recordHealth(id, ok, error),
        onRound: () => this.registry.expireGrace(),
      },
      config.health.intervalMs,
      config.health.timeoutMs,
    );
    this.health.start();
  }

  serves(method: string, path: string): boolean {
    return ROUTES[path] !== undefined || path === '/admin' || path.startsWith('/admin/');
  }

  ready(): boolean {
    return this.registry.canServe() && this.backend.canServe();
  }

  checkHealth(): Promise<void> {
    return this.health.checkAll();
  }

  async handle(call: HttpCall): Promise<HttpReply> {
    const startedAt = performance.now();
    const path = call.url.split('?', 1)[0];
    const route = ROUTES[path];
    const label = route ? path : path.startsWith('/admin') ? '/admin' : 'other';
    try {
      if (path === '/admin' || path.startsWith('/admin/')) {
        return this.counted(label, await handleAdmin(call, path, { registry: this.registry, token: this.config.adminToken, readJson: (c) => this.readJson(c) }));
      }
      if (!route) throw notFound(`no route ${call.method} ${path}`, 'unknown_route');
      if (call.method !== route.method && !(route.method === 'GET' && call.method === 'HEAD')) {
        throw new HttpError(405, 'invalid_request_error', 'method_not_allowed', `${path} takes ${route.method}, not ${call.method}`, { allow: route.method });
      }
      switch (route.name) {
        case 'completions':
        case 'chat':
          return await this.openai(path as OpenAiRoute, call, startedAt);
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
      return this.failed(label, err, call);
    }
  }

  private async openai(route: OpenAiRoute, call: HttpCall, startedAt: number): Promise<HttpReply> {
    const requestId = requestIdOf(call.headers['x-request-id']);
    let bytes: Uint8Array;
    let prepared: PreparedRequest;
    try {
      bytes = await this.readBody(call);
      const parsed = parseRequestBody(route, bytes, this.pre);
      prepared = prepareRequest(route, parsed.json, call.headers, this.pre, parsed.scanned);
      if (!this.ready()) {
        throw new HttpError(503, 'service_unavailable', 'no_workers', 'no worker can serve requests right now', { 'retry-after': '1' });
      }
    } catch (err) {
      throw withRequestId(err, requestId);
    }
    // The router asks engines for usage (token metrics); the relay drops it if the client did not.
    const clientWantsUsage = wantsUsage(prepared.body);
    if (prepared.stream && !clientWantsUsage) requestUsage(prepared.body);
    // Unchanged and valid UTF-8 (the parse replaced any invalid byte): engines get the client's bytes.
    else if (prepared.verbatim && isUtf8(bytes)) markVerbatim(prepared.body, bytes);

    const controller = new Cancellation();
    const onClientGone = () => controller.abort();
    call.signal?.addEventListener('abort', onClientGone, { once: true });
    if (call.signal?.aborted) controller.abort();
    this.metrics.frontend((performance.now() - startedAt) * 1000);
    let routed;
    try {
      routed = await this.backend.dispatch({
        route: prepared.engineRoute,
        body: prepared.body,
        tokens: prepared.tokens,
        requestId,
        hints: prepared.hints,
        signal: controller.signal,
      });
    } catch (err) {
      call.signal?.removeEventListener('abort', onClientGone);
      throw withRequestId(err, requestId);
    }
    const idHeader = { 'x-request-id': requestId };
    if (routed.stream) {
      return {
        status: routed.status,
        headers: withFields(routed.headers, idHeader, SSE_HEADERS),
        stream: relayStream(routed.stream, {
          route,
          chat: prepared.chatAsCompletions,
          clientWantsUsage,
          startedAt,
          metrics: this.metrics,
          abort: () => controller.abort(),
          onEnd: () => call.signal?.removeEventListener('abort', onClientGone),
        }),
      };
    }
    call.signal?.removeEventListener('abort', onClientGone);
    const out = prepared.chatAsCompletions ? completionToChat(routed.body) : routed.body;
    const usage = usageOf(routed.body);
    if (usage) {
      const c = usageCounts(usage);
      this.metrics.usage(c.promptTokens, c.completionTokens, c.cachedTokens ?? 0);
    }
    this.metrics.request(route, routed.status);
    return { status: routed.status, headers: withFields(routed.headers, idHeader, { 'content-type': 'application/json' }), body: JSON.stringify(out) };
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

  private healthReply(): HttpReply {
    const workers = this.registry.list();
    const count = (pred: (w: (typeof workers)[number]) => boolean) => workers.filter(pred).length;
    const summary = {
      status: this.ready() ? 'ready' : 'unavailable',
      workers: workers.length,
      healthy: count((w) => w.state === 'healthy'),
      unhealthy: count((w) => w.state === 'unhealthy'),
      draining: count((w) => w.state === 'draining'),
      selectable: { prefill: this.registry.selectable('prefill').length, decode: this.registry.selectable('decode').length },
    };
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

  private failed(label: string, err: unknown, call: HttpCall): HttpReply {
    const r = errorReply(err);
    if (r.status === 429) this.metrics.backpressureRefusal();
    this.metrics.request(label, r.status);
    const headers: Record<string, string> = copyFields(r.headers);
    const id = (err as { requestId?: unknown } | null)?.requestId ?? call.headers['x-request-id'];
    if (isShortVisibleAscii(id)) headers['x-request-id'] = id;
    return { status: r.status, headers, body: r.body };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.health.close();
    await this.backend.close();
  }
}

function json(status: number, value: unknown): HttpReply {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

function modelsList(models: readonly string[]) {
  const created = Math.floor(Date.now() / 1000);
  return { object: 'list', data: models.map((id) => ({ id, object: 'model', created, owned_by: 'kvroute' })) };
}

/** Tags an error with the request's id, so its error reply echoes it (a generated id included). */
function withRequestId(err: unknown, requestId: string): unknown {
  if (typeof err === 'object' && err !== null) (err as { requestId?: string }).requestId ??= requestId;
  return err;
}
