// The OpenTelemetry side of tracing.ts, imported only when tracing is on. A tracer provider of the
// router's own (never the global one: an embedding application keeps its tracing), a batch span
// processor, the OTLP exporter of the chosen protocol, W3C trace context in and out. Spans are
// parented explicitly (no context manager): the request span is the client's traceparent's child,
// everything else the request span's, and each engine gets the traceparent of its leg's span.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import type { RoutingDecision } from '../../core/routing-core.js';
import type { TraceContext } from '../../engines/transport.js';
import type { WorkerInfo } from '../../engines/types.js';
import type { LegTrace } from '../../routing/request-trace.js';
import { errorSummary } from '../call/errors.js';
import type { RelayTrace, RequestEnd, RequestTracing, SamplerSetting, Tracing, TracingSettings } from './tracing-api.js';

const SCOPE = 'kvroute';

export async function createOtelTracing(settings: TracingSettings, serviceVersion: string): Promise<Tracing> {
  const exporter = await exporterOf(settings);
  // OTEL_RESOURCE_ATTRIBUTES adds to these; the service name is the settings' (OTEL_SERVICE_NAME included).
  const detected = detectResources({ detectors: [envDetector] });
  const resource = detected.merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: serviceVersion }));
  const provider = new BasicTracerProvider({ resource, sampler: samplerOf(settings.sampler), spanProcessors: [new BatchSpanProcessor(exporter)] });
  return new OtelTracing(provider, provider.getTracer(SCOPE, serviceVersion));
}

async function exporterOf(s: TracingSettings): Promise<SpanExporter> {
  const config = s.endpoint === undefined ? {} : { url: s.endpoint };
  switch (s.protocol) {
    case 'http/protobuf':
      return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(config);
    case 'http/json':
      return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config);
    case 'grpc':
      return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter(config);
  }
}

function samplerOf(s: SamplerSetting): Sampler {
  switch (s.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(s.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(s.ratio) });
  }
}

const w3c = new W3CTraceContextPropagator();

class OtelTracing implements Tracing {
  constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  request(method: string, route: string, headers: Record<string, string | undefined>, requestId: string, startedAt: number): RequestTracing {
    const parent = headers.traceparent === undefined ? ROOT_CONTEXT : w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        startTime: startedAt,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          [ATTR_HTTP_ROUTE]: route,
          [ATTR_GEN_AI_OPERATION_NAME]: route === '/v1/chat/completions' ? 'chat' : 'text_completion',
          'kvroute.request_id': requestId,
        },
      },
      parent,
    );
    // Not sampled: nothing of this trace is recorded, so no child span is made (the engines get the
    // request span's unsampled context, which keeps the trace id and the client's decision).
    return span.isRecording() ? new OtelRequest(this.tracer, span) : unsampled(span);
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/** The W3C headers of `span`, as its engine gets them. */
function contextOf(span: Span): TraceContext {
  const carrier: Record<string, string> = {};
  w3c.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  return carrier.tracestate === undefined ? { traceparent: carrier.traceparent } : { traceparent: carrier.traceparent, tracestate: carrier.tracestate };
}

/** Marks `span` failed: the OpenAI error code as error.type and the client's message as the status. */
function failed(span: Span, code: string, message?: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The error type of a status without an error body: 499, the client left. */
function codeOfStatus(status: number): string {
  return status === 499 ? 'client_disconnected' : String(status);
}

/** Marks `span` failed by `err`, with the code and message its client would get. */
function failedBy(span: Span, err: unknown): void {
  const s = errorSummary(err);
  failed(span, s.code, s.message);
  span.addEvent('exception', { 'exception.type': err instanceof Error ? err.name : typeof err, 'exception.message': s.message });
}

function usageAttributes(span: Span, o: RequestEnd | undefined): void {
  if (o?.usage) {
    span.setAttribute(ATTR_GEN_AI_USAGE_INPUT_TOKENS, o.usage.promptTokens);
    span.setAttribute(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, o.usage.completionTokens);
    if (o.usage.cachedTokens !== undefined) span.setAttribute('kvroute.usage.cached_tokens', o.usage.cachedTokens);
  }
  if (o?.responseId !== undefined) span.setAttribute(ATTR_GEN_AI_RESPONSE_ID, o.responseId);
}

class OtelRequest implements RequestTracing {
  readonly traceId: string;
  private readonly ctx: Context;
  private mode_?: { mode: string; reason: string };
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
  ) {
    this.traceId = span.spanContext().traceId;
    this.ctx = trace.setSpan(ROOT_CONTEXT, span);
  }

  private child(name: string, attributes: Attributes, startTime?: number, kind: SpanKind = SpanKind.INTERNAL): Span {
    return this.tracer.startSpan(name, { kind, attributes, startTime }, this.ctx);
  }

  preprocessed(startedAt: number, p: { model: string; stream: boolean; promptTokens: number; kind: string }): void {
    this.span.setAttributes({ [ATTR_GEN_AI_REQUEST_MODEL]: p.model, [ATTR_GEN_AI_REQUEST_STREAM]: p.stream, 'kvroute.prompt_tokens': p.promptTokens });
    this.child('kvroute.preprocess', { 'kvroute.prompt_tokens': p.promptTokens, 'kvroute.preprocess.kind': p.kind }, startedAt).end();
  }

  mode(mode: string, reason: string): void {
    this.mode_ = { mode, reason };
    this.span.setAttributes({ 'kvroute.mode': mode, 'kvroute.mode_reason': reason });
  }

  decision(pool: string, d: RoutingDecision, startedAt: number): void {
    const attributes: Attributes = {
      'kvroute.pool': pool,
      'kvroute.policy': d.policy,
      'kvroute.worker': d.worker,
      'kvroute.dp_rank': d.dpRank,
      'kvroute.overlap_blocks': d.overlapBlocks,
      'kvroute.cached_tokens': d.cachedTokens,
      'kvroute.prefill_tokens': d.prefillTokens,
      'kvroute.routing_us': d.timingsUs.total,
    };
    if (d.predictedTtftMs !== undefined) attributes['kvroute.predicted_ttft_ms'] = d.predictedTtftMs;
    if (this.mode_) {
      attributes['kvroute.mode'] = this.mode_.mode;
      attributes['kvroute.mode_reason'] = this.mode_.reason;
    }
    this.span.setAttribute(pool === 'prefill' ? 'kvroute.prefill_worker' : 'kvroute.decode_worker', d.worker);
    this.child('kvroute.route', attributes, startedAt).end();
  }

  queued(pool: string): { end(err?: unknown): void } {
    const span = this.child('kvroute.queue', { 'kvroute.pool': pool });
    return {
      end(err?: unknown) {
        if (err !== undefined) failedBy(span, err);
        span.end();
      },
    };
  }

  leg(pool: string, worker: WorkerInfo, dpRank: number, stream: boolean): LegTrace {
    return new OtelLeg(this.child(`kvroute.leg ${pool}`, legAttributes(pool, worker, dpRank, stream), undefined, SpanKind.CLIENT), pool, stream);
  }

  relay(): RelayTrace {
    const span = this.child('kvroute.relay', {});
    let first = false;
    return {
      firstToken() {
        if (first) return;
        first = true;
        span.addEvent('first_token');
      },
      end(status, o) {
        if (o?.tokenFrames !== undefined) span.setAttribute('kvroute.token_frames', o.tokenFrames);
        if (status >= 400) failed(span, o?.code ?? codeOfStatus(status), o?.message);
        span.end();
      },
    };
  }

  end(status: number, o?: RequestEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    usageAttributes(this.span, o);
    if (status >= 400) failed(this.span, o?.code ?? codeOfStatus(status), o?.message);
    this.span.end();
  }
}

/** The engine URL's host and port, parsed once per URL. */
const hosts = new Map<string, { address: string; port: number }>();
function hostOf(baseUrl: string): { address: string; port: number } {
  let h = hosts.get(baseUrl);
  if (h === undefined) {
    const url = new URL(baseUrl);
    h = { address: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
    if (hosts.size >= 4096) hosts.clear(); // workers come and go: bounded
    hosts.set(baseUrl, h);
  }
  return h;
}

function legAttributes(pool: string, worker: WorkerInfo, dpRank: number, stream: boolean): Attributes {
  const host = hostOf(worker.baseUrl);
  return {
    'kvroute.pool': pool,
    'kvroute.worker': worker.id,
    'kvroute.dp_rank': dpRank,
    'kvroute.engine': worker.kind,
    [ATTR_SERVER_ADDRESS]: host.address,
    [ATTR_SERVER_PORT]: host.port,
    [ATTR_GEN_AI_REQUEST_STREAM]: stream,
  };
}

const NOTHING = (): void => undefined;
const NO_WAIT = { end: NOTHING };
const NO_RELAY: RelayTrace = { firstToken: NOTHING, end: NOTHING };

/** The trace of a request that is not sampled: its id for log lines, its context for the engines, nothing recorded. */
function unsampled(span: Span): RequestTracing {
  const legTrace: LegTrace = { context: contextOf(span), sent: NOTHING, firstByte: NOTHING, firstToken: NOTHING, retried: NOTHING, end: NOTHING };
  return {
    traceId: span.spanContext().traceId,
    preprocessed: NOTHING,
    mode: NOTHING,
    decision: NOTHING,
    queued: () => NO_WAIT,
    leg: () => legTrace,
    relay: () => NO_RELAY,
    end: NOTHING,
  };
}

class OtelLeg implements LegTrace {
  readonly context: TraceContext;
  private retries = 0;
  private first = false;

  constructor(
    private readonly span: Span,
    private readonly pool: string,
    private readonly stream: boolean,
  ) {
    this.context = contextOf(span);
  }

  sent(): void {
    this.span.addEvent('sent');
  }

  firstByte(): void {
    this.span.addEvent('first_byte');
  }

  firstToken(): void {
    if (this.first) return;
    this.first = true;
    this.span.addEvent('first_token');
  }

  retried(reason: string, worker: WorkerInfo, dpRank: number): void {
    this.retries++;
    this.span.addEvent('retry', { 'kvroute.retry.reason': reason, 'kvroute.retry.worker': worker.id });
    // The leg now goes to `worker`: the span names where it went in the end.
    this.span.setAttributes(legAttributes(this.pool, worker, dpRank, this.stream));
  }

  end(reason: string, err?: unknown): void {
    this.span.setAttributes({ 'kvroute.retries': this.retries, 'kvroute.leg.outcome': reason });
    if (reason === 'error' && err !== undefined) failedBy(this.span, err);
    this.span.end();
  }
}
