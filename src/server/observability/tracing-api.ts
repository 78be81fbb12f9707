// The shapes of tracing: its settings, and what the router tells a request's trace (the spans of
// otel-tracing.ts). Types only, so that tracing.ts and otel-tracing.ts share them without a cycle.
import type { RequestTrace } from '../../routing/request-trace.js';
import type { UsageCounts } from '../../engines/usage.js';
import type { OTLP_PROTOCOLS } from '../config/operations-schema.js';

export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** The `tracing` section of the config file, as written (every field optional). */
export interface TracingConfig {
  enabled?: boolean;
  endpoint?: string;
  protocol?: OtlpProtocol;
  serviceName?: string;
  sampleRatio?: number;
}

/** How new traces are sampled (OTEL_TRACES_SAMPLER's names). */
export type SamplerSetting =
  | { name: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { name: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

export interface TracingSettings {
  protocol: OtlpProtocol;
  /** Undefined: the exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT itself, else its default. */
  endpoint?: string;
  serviceName: string;
  sampler: SamplerSetting;
}

/** What one request tells its trace beyond routing's part (RequestTrace). */
export interface RequestTracing extends RequestTrace {
  /** Preprocessing (chat template render and tokenization, one native pass) ran from `startedAt` until now. */
  preprocessed(startedAt: number, p: { model: string; stream: boolean; promptTokens: number; kind: string }): void;
  /** The relay of the engine's stream to the client begins. */
  relay(): RelayTrace;
  /** The request is answered: its status, and the OpenAI error code when it failed. */
  end(status: number, o?: RequestEnd): void;
}

export interface RequestEnd {
  /** The OpenAI error code of a failed request. */
  code?: string;
  message?: string;
  usage?: UsageCounts;
  /** The answer's id (gen_ai.response.id). */
  responseId?: string;
}

export interface RelayTrace {
  firstToken(): void;
  end(status: number, o?: RequestEnd & { tokenFrames?: number }): void;
}

export interface Tracing {
  /** A request's trace: a child of the client's traceparent/tracestate when it sent one. */
  request(method: string, route: string, headers: Record<string, string | undefined>, requestId: string, startedAt: number): RequestTracing;
  /** Sends what is buffered. */
  flush(): Promise<void>;
  /** Flushes, then stops exporting. */
  shutdown(): Promise<void>;
}
