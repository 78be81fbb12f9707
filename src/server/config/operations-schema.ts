// The router's operational settings: health checks, passive ejection, API key limits, replicas and TLS.
import { Type } from '@sinclair/typebox';
import { defaulted, oneOf } from './declare.js';
import { cli, text } from './schema-common.js';

export const HealthSchema = Type.Object(
  {
    intervalMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        default: 5000,
        description: 'Period of GET /health per worker; 0 turns checking off (workers count as healthy).',
        ...cli({ flag: 'health-interval-ms', arg: 'N', group: 'Operations', help: 'period of worker health checks, 0 = off' }),
      }),
    ),
    timeoutMs: defaulted(Type.Integer({ minimum: 1, maximum: 600_000, default: 2000, description: 'A health check not answered in this time fails.' })),
    blockGraceMs: defaulted(
      Type.Integer({ minimum: 0, maximum: 86_400_000, default: 30_000, description: 'A worker unhealthy this long loses its blocks from the index.' }),
    ),
  },
  { additionalProperties: false, default: {}, description: 'Health checking of the workers.' },
);

/** Passive ejection of failing workers (Envoy's outlier detection): routing/outlier-detection.ts. */
export const OutlierDetectionSchema = Type.Object(
  {
    enabled: defaulted(
      Type.Boolean({
        default: true,
        description:
          'Take a worker out of selection at once after consecutive connect failures or 5xx answers, until its ejection time runs out or (connect failures) a health check passes.',
        ...cli({ flag: 'no-ejection', value: false, group: 'Operations', help: 'never eject a failing worker from selection between health checks' }),
      }),
    ),
    consecutiveConnectFailures: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        default: 1,
        description:
          'Consecutive legs the worker never got (connection refused, reset before the request was written, connect timeout) that eject it; 0: never for these.',
      }),
    ),
    consecutive5xx: defaulted(
      Type.Integer({ minimum: 0, maximum: 1_000_000, default: 5, description: 'Consecutive 5xx answers that eject the worker; 0: never for these.' }),
    ),
    baseEjectionTimeMs: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 86_400_000,
        default: 30_000,
        description: "The first ejection's length; the n-th in a row (the worker kept failing after it came back) lasts n times this.",
        ...cli({
          flag: 'ejection-base-ms',
          arg: 'N',
          group: 'Operations',
          help: 'a failing worker is ejected this long, n times this at its n-th ejection in a row',
        }),
      }),
    ),
    maxEjectionTimeMs: defaulted(Type.Integer({ minimum: 1, maximum: 86_400_000, default: 300_000, description: 'The longest ejection.' })),
    maxEjectionPercent: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 50,
        description: "At most this percentage of a pool's workers is ejected at once, so a bad network never empties the fleet.",
        ...cli({ flag: 'max-ejection-percent', arg: 'N', group: 'Operations', help: "at most this percentage of a pool's workers ejected at once" }),
      }),
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'Passive ejection (outlier detection): failing workers leave selection at once, not at the next health round.',
  },
);

/** Per API key limits, token buckets refilled continuously; a key's own limits (in the keys file) replace these. */
export const RateLimitSchema = Type.Object(
  {
    requestsPerMinute: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1e9,
        description: "Requests per minute per API key (a burst of one minute's worth); above it, 429 with Retry-After.",
        ...cli({
          flag: 'key-requests-per-minute',
          arg: 'N',
          group: 'Access',
          help: 'requests per minute per API key, 429 above',
          defaultHelp: 'default: no limit',
        }),
      }),
    ),
    tokensPerMinute: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1e12,
        description:
          'Tokens per minute per API key: a request costs its prompt tokens plus its max_tokens (what it may generate), charged when it is admitted; above it, 429 with Retry-After.',
        ...cli({
          flag: 'key-tokens-per-minute',
          arg: 'N',
          group: 'Access',
          help: 'tokens per minute per API key, a request costing prompt + max_tokens; 429 above',
          defaultHelp: 'default: no limit',
        }),
      }),
    ),
  },
  { additionalProperties: false, default: {}, description: 'Rate limits of every API key (with apiKeysFile).' },
);

/** nats:// or tls:// server URLs, comma-separated (the servers of one NATS cluster). */
const NATS_URLS = '^(nats|tls)://[^\\s,]+(,(nats|tls)://[^\\s,]+)*$';
/** A NATS subject token and bucket name part. */
const REPLICA_NAME = '^[A-Za-z0-9_-]{1,64}$';

/** Router replicas that act as one over NATS (src/server/replicas); absent: this router alone. */
export const ReplicasSchema = Type.Object(
  {
    nats: Type.String({
      pattern: NATS_URLS,
      expected: 'nats://host:port (several comma-separated for a NATS cluster)',
      description:
        'The NATS servers the replicas share state through (JetStream on for sessions, the fleet and the index snapshots of warm starts): nats://host:port, several comma-separated for a NATS cluster.',
      ...cli({
        flag: 'nats',
        arg: 'URL',
        group: 'Replicas',
        help: 'share bookings, session pins, admin fleet changes and index snapshots (warm start) with the other replicas through this NATS server (JetStream on for all but bookings); several comma-separated for a NATS cluster',
      }),
    }),
    id: Type.Optional(
      Type.String({
        pattern: REPLICA_NAME,
        expected: '1 to 64 letters, digits, - or _',
        description: "This replica's id among its siblings (default: the host name and process id).",
        ...cli({
          flag: 'replica-id',
          arg: 'ID',
          group: 'Replicas',
          help: "this replica's id among its siblings",
          defaultHelp: 'default: host name and process id',
        }),
      }),
    ),
    cluster: Type.Optional(
      Type.String({
        pattern: REPLICA_NAME,
        expected: '1 to 64 letters, digits, - or _',
        description:
          "The replicas that share state: those with the same cluster name on the same NATS (default: the first model's name, other characters replaced by _).",
        ...cli({
          flag: 'replica-cluster',
          arg: 'NAME',
          group: 'Replicas',
          help: 'replicas with the same cluster name share state',
          defaultHelp: "default: the first model's name",
        }),
      }),
    ),
    heartbeatMs: defaulted(Type.Integer({ minimum: 50, maximum: 60_000, default: 1000, description: 'Period of the heartbeat each replica publishes.' })),
    ttlMs: defaulted(
      Type.Integer({
        minimum: 100,
        maximum: 600_000,
        default: 5000,
        description: 'A replica silent this long is gone: the others release every booking it made.',
        ...cli({ flag: 'replica-ttl-ms', arg: 'N', group: 'Replicas', help: 'a replica silent this long is gone: its bookings are released' }),
      }),
    ),
    batchMaxEvents: defaulted(Type.Integer({ minimum: 1, maximum: 65_536, default: 256, description: 'Booking events sent in one message at most.' })),
    batchMaxDelayMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        default: 1,
        description: 'Longest a booking event waits for others to share its message (0: sent at the end of the event loop turn).',
      }),
    ),
    connectTimeoutMs: defaulted(
      Type.Integer({
        minimum: 100,
        maximum: 600_000,
        default: 2000,
        description: 'How long startup waits for NATS; without it the replica starts alone (degraded) and keeps trying.',
      }),
    ),
    warmStart: defaulted(
      Type.Boolean({
        default: true,
        description:
          "At startup, restore the index from the cluster's latest snapshot (JetStream object store), then catch up from the engines' replay buffers before reporting ready.",
        ...cli({
          flag: 'no-warm-start',
          value: false,
          group: 'Replicas',
          help: "start with an empty index instead of restoring the cluster's latest snapshot",
        }),
      }),
    ),
    warmStartTimeoutMs: defaulted(
      Type.Integer({
        minimum: 100,
        maximum: 3_600_000,
        default: 60_000,
        description:
          'Longest a starting replica stays unready while it loads the snapshot and catches up: past it, it reports ready anyway (an unloaded snapshot means a cold start).',
        ...cli({
          flag: 'warm-start-timeout-ms',
          arg: 'N',
          group: 'Replicas',
          help: 'a starting replica reports ready after this long at most, caught up or not',
        }),
      }),
    ),
    snapshotIntervalMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        default: 30_000,
        description:
          "How often the replicas publish their index to the cluster's object store for warm starts (0: never; otherwise at least 1000). The catch-up must stay within the engines' replay buffers.",
        ...cli({ flag: 'snapshot-interval-ms', arg: 'N', group: 'Replicas', help: 'publish the index for warm starts this often (0: never)' }),
      }),
    ),
    snapshotMaxAgeMs: defaulted(
      Type.Integer({
        minimum: 1000,
        maximum: 86_400_000,
        default: 600_000,
        description: "A snapshot older than this is not restored (cold start): its catch-up would outrun the engines' replay buffers.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Router replicas acting as one: active bookings, session pins and fleet changes shared over NATS (off when absent).',
  },
);

/** TLS on the router's listeners. */
export const TlsSchema = Type.Object(
  {
    certFile: text({
      description: 'PEM certificate (chain) file.',
      ...cli({ flag: 'tls-cert', arg: 'FILE', group: 'Listening', help: 'serve HTTPS with this PEM certificate (chain) file (needs --tls-key)' }),
    }),
    keyFile: text({
      description: 'PEM private key file.',
      ...cli({ flag: 'tls-key', arg: 'FILE', group: 'Listening', help: 'the PEM private key of --tls-cert' }),
    }),
  },
  { additionalProperties: false, description: 'Serve HTTPS: every listener of the router (the admin listener too) uses this certificate.' },
);

/** The OTLP protocols of OTEL_EXPORTER_OTLP_PROTOCOL. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;

/**
 * OpenTelemetry tracing (observability/tracing.ts). Every setting left out here falls back to
 * OpenTelemetry's standard environment variable named in its description, then to its default.
 */
export const TracingSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'Export OpenTelemetry traces of the requests (default: on when OTEL_TRACES_EXPORTER is otlp, else off). Off, the tracing SDK is not even loaded.',
        ...cli({ flag: 'tracing', group: 'Operations', help: 'export OpenTelemetry traces over OTLP (default: when OTEL_TRACES_EXPORTER=otlp)' }),
      }),
    ),
    endpoint: Type.Optional(
      text({
        pattern: '^https?://\\S+$',
        expected: 'an http(s) URL',
        description:
          'Where spans go: the OTLP/HTTP traces URL (http://collector:4318/v1/traces) or the gRPC address (http://collector:4317). Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended for HTTP), else localhost:4318 (4317 for grpc).',
        ...cli({ flag: 'otlp-endpoint', arg: 'URL', group: 'Operations', help: 'OTLP traces URL (default: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT)' }),
      }),
    ),
    protocol: Type.Optional(
      oneOf(OTLP_PROTOCOLS, {
        description:
          'OTLP encoding: http/protobuf, http/json or grpc. Default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.',
        ...cli({
          flag: 'otlp-protocol',
          arg: 'P',
          group: 'Operations',
          help: 'http/protobuf, http/json or grpc (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)',
        }),
      }),
    ),
    serviceName: Type.Optional(text({ description: "The traces' service.name. Default: OTEL_SERVICE_NAME, else kvroute." })),
    sampleRatio: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          "Share of new traces recorded (parentbased_traceidratio: a request that comes with a client's traceparent follows the client's sampling decision). Default: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, else every trace (parentbased_always_on).",
        ...cli({
          flag: 'trace-sample-ratio',
          arg: 'R',
          group: 'Operations',
          help: 'share of new traces recorded, 0 to 1 (default: OTEL_TRACES_SAMPLER[_ARG], else 1)',
        }),
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'OpenTelemetry tracing of requests, exported over OTLP (off unless enabled here or by OTEL_TRACES_EXPORTER=otlp).',
  },
);
