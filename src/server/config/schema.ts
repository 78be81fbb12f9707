// Every setting of the router, declared once: its type, range, default and description (the config
// file, `POST /admin/workers` and the published JSON Schema), and where it has one, its
// `kvroute serve` flag (declare.ts). A new setting is one entry here: config.ts carries it through,
// the flag and its --help line come with its `cli` annotation.
import { Type, type TSchema } from '@sinclair/typebox';
import { ENGINE_KINDS, INDEXER_MODES, POLICY_NAMES, QUEUE_POLICIES, WORKER_ROLES } from '../../core/vocabulary.js';
import { DEFAULT_CONDITIONAL_DISAGG } from '../../routing/prefill/mode.js';
import { DEFAULT_QUEUE_SETTINGS } from '../../routing/queue/admission-queue.js';
import { LOG_LEVELS } from '../../util/logger.js';
import { MAX_BLOCK_SIZE } from '../../util/validate.js';
import { defaulted, oneOf, type Annotations, type FlagAnnotation } from './declare.js';

const cli = (flag: FlagAnnotation): Annotations => ({ cli: flag });
const text = (options: Record<string, unknown> = {}) => Type.String({ minLength: 1, ...options });

/** http:// or https:// (any case), then something. */
const HTTP_URL = '^[Hh][Tt][Tt][Pp][Ss]?://.+';
/** tcp://host:port, host a name, an IPv4 address or a bracketed IPv6 address. */
const TCP_ENDPOINT = '^tcp://(\\[[^\\]]+\\]|[^:/]+):\\d+$';
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

function endpoints(description: string, key: string) {
  const one = Type.String({ pattern: TCP_ENDPOINT, expected: 'an endpoint like tcp://host:port' });
  return Type.Union([one, Type.Array(one)], {
    description,
    key,
    expected: 'an endpoint like tcp://host:port, or an array of them (one per dp rank)',
  });
}

/** One engine worker: in the config file's `workers`, in `POST /admin/workers`, and as `--worker key=value,...`. */
export const WorkerSchema = Type.Object(
  {
    id: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, key: 'id', description: 'Unique id of the worker: the worker hints of requests and the metrics name it.' }),
    role: defaulted(oneOf(WORKER_ROLES, { default: 'aggregated', key: 'role', description: 'What the worker does: prefill, decode, or both (aggregated).' })),
    kind: defaulted(oneOf(ENGINE_KINDS, { default: 'vllm', key: 'kind', description: 'The engine the worker runs; it decides the prefill/decode handoff.' })),
    baseUrl: Type.String({ pattern: HTTP_URL, key: 'url', expected: 'an http(s) URL', description: "The engine's OpenAI-compatible server, http(s)://host:port (a path prefix is kept)." }),
    dpSize: defaulted(Type.Integer({ minimum: 1, maximum: 0xffff, default: 1, key: 'dp', description: 'Data-parallel ranks the worker runs.' })),
    kvEvents: Type.Optional(
      endpoints(
        "ZeroMQ PUB endpoint of the worker's KV events: one for all ranks (rank r on port + r), or one per rank. Without it the router predicts the worker's cache from its own decisions.",
        'events',
      ),
    ),
    replayEndpoint: Type.Optional(
      endpoints('ZeroMQ ROUTER endpoint of the KV event replay service (one, rank r on port + r, or one per rank); needs kvEvents. Without it a gap in the events clears the index.', 'replay'),
    ),
    kvCapacityBlocks: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 40, key: 'capacity', description: "The worker's KV cache size in blocks (for busyDecodeFraction)." })),
    bootstrap: Type.Optional(
      Type.Object(
        { host: text(), port: Type.Integer({ minimum: 1, maximum: 65535 }) },
        { additionalProperties: false, key: 'bootstrap', description: 'SGLang prefill workers: where decode workers meet the prefill (host:port in --worker).' },
      ),
    ),
  },
  { additionalProperties: false },
);

const finite = (description: string) => Type.Optional(Type.Number({ minimum: -1e12, maximum: 1e12, description }));
const perToken = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1e6, description }));

/** The ttft policy's model of the pool's engines; what it leaves out is the library's default (Dynamo's mocker fit, vLLM's 8192-token budget). */
export const TtftModelSchema = Type.Object(
  {
    prefill: Type.Optional(
      Type.Object({ a: finite('ms per token squared'), b: finite('ms per token'), c: finite('ms per step') }, { additionalProperties: false, description: 'A prefill step of N tokens takes a N^2 + b N + c ms.' }),
    ),
    decode: Type.Optional(
      Type.Object(
        { a: finite('ms per usage squared'), b: finite('ms per usage'), c: finite('ms'), minMs: perToken('the shortest decode pass, ms') },
        { additionalProperties: false, description: 'A decode pass at KV usage u (0..1) takes max(minMs, a u^2 + b u + c) ms.' },
      ),
    ),
    maxNumBatchedTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: "Tokens one engine step computes at most (vLLM's max_num_batched_tokens)." })),
    reloadMsPerToken: Type.Optional(
      Type.Object(
        { host: perToken('from host memory'), disk: perToken('from disk'), external: perToken('from an external pool') },
        { additionalProperties: false, description: 'Milliseconds to reload one token of KV from each lower tier.' },
      ),
    ),
    transferMsPerToken: perToken('Milliseconds to receive one token of KV from a prefill worker (decode pools of a disaggregated fleet).'),
  },
  { additionalProperties: false, description: "The ttft policy's timing model of the pool's engines (the default is Dynamo's mocker fit: set it from your engines' measured step times)." },
);

/** One routing pool's selection settings. */
export const PoolRoutingSchema = Type.Object(
  {
    policy: defaulted(
      oneOf(POLICY_NAMES, { default: 'ttft', description: "Worker selection policy: 'ttft' (each worker's predicted time to first token: no weight to tune; the default), 'kv' (Dynamo's cost), 'round_robin', 'random', 'least_loaded', 'direct' (the request names the worker).", ...cli({ flag: 'policy', arg: 'P', group: 'Routing', help: 'decode/aggregated pool policy' }) }),
    ),
    overlapScoreCredit: defaulted(Type.Number({ minimum: 0, maximum: 1e6, default: 1, description: 'Prefill blocks each cached block is worth in the cost.' })),
    prefillLoadScale: defaulted(Type.Number({ minimum: 0, maximum: 1e6, default: 1, description: "Weight of a worker's booked prefill load in the cost." })),
    temperature: defaulted(Type.Number({ minimum: 0, maximum: 1e6, default: 0, description: 'Softmax temperature over costs; 0 picks the lowest cost, exact ties at random.' })),
    hostCacheCredit: defaulted(
      Type.Number({ minimum: 0, maximum: 1e6, default: 0.75, description: "Prefill blocks each block a worker can reload from host memory (KV events with medium CPU) is worth in the cost: Dynamo's host_cache_hit_weight." }),
    ),
    diskCacheCredit: defaulted(
      Type.Number({ minimum: 0, maximum: 1e6, default: 0.25, description: "The same for a block on local disk (medium DISK, CPU_TIER2): Dynamo's disk_cache_hit_weight." }),
    ),
    externalCacheCredit: defaulted(
      Type.Number({ minimum: 0, maximum: 1e6, default: 0.25, description: 'The same for a block in an external pool (medium EXTERNAL): Dynamo credits it as disk.' }),
    ),
    ttftModel: Type.Optional(TtftModelSchema),
    busyDecodeFraction: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1e6, description: 'Leave out a worker whose decode blocks reach this fraction of its kvCapacityBlocks.' }),
    ),
    busyPrefillTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Leave out a worker with this many booked prefill tokens.' })),
    maxQueuedPrefillTokens: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: "Backpressure: refuse (429) a request when the pool's booked prefill tokens and its own would exceed this.",
        ...cli({ flag: 'max-queued-prefill-tokens', arg: 'N', group: 'Routing', help: 'backpressure: refuse (429) above this many queued prompt tokens' }),
      }),
    ),
  },
  { additionalProperties: false, default: {}, description: 'Routing of the decode pool (decode and aggregated workers).' },
);

/** The prefill pool's: the same fields, none with a default of its own (routing's apply). */
export const PrefillRoutingSchema = (() => {
  const s = Type.Partial(PoolRoutingSchema, { additionalProperties: false, description: 'Routing of the prefill pool; what it leaves out is taken from routing.' });
  for (const [key, field] of Object.entries(s.properties) as Array<[string, TSchema & Annotations & { default?: unknown }]>) {
    delete field.default;
    delete field.cli;
    if (key === 'policy') field.cli = { flag: 'prefill-policy', arg: 'P', group: 'Routing', help: 'prefill pool policy', defaultHelp: 'default: same as --policy' };
  }
  return s;
})();

export const SessionAffinitySchema = Type.Object(
  {
    header: defaulted(
      Type.String({
        pattern: HEADER_NAME,
        default: 'x-session-id',
        expected: 'an HTTP header name',
        description: 'The request header carrying the session id (any case).',
        ...cli({
          flag: 'session-header',
          arg: 'NAME',
          group: 'Routing',
          help: "session affinity: requests with this header (e.g. x-session-id) go to the workers their session's earlier requests went to, while those can serve (explicit worker hints win)",
          defaultHelp: 'off unless this or --session-ttl-ms is given; then default x-session-id',
        }),
      }),
    ),
    ttlMs: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 86_400_000,
        default: 600_000,
        description: 'A session unused this long is forgotten.',
        ...cli({ flag: 'session-ttl-ms', arg: 'N', group: 'Routing' }),
      }),
    ),
    maxSessions: defaulted(Type.Integer({ minimum: 1, maximum: 10_000_000, default: 100_000, description: 'Sessions remembered at most; the least recently used go first.' })),
  },
  { additionalProperties: false },
);

/** The router queue of each pool (Dynamo's router_queue_threshold, router_queue_policy). */
export const RouterQueueSchema = Type.Object(
  {
    threshold: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        description:
          "Queue in the router while every eligible worker of the pool computing a request's prompt has more booked prefill tokens than this multiple of its max_num_batched_tokens (0: queue as soon as a worker has any); off when absent. Changeable at runtime: PUT /admin/queue.",
        ...cli({ flag: 'router-queue-threshold', arg: 'X', group: 'Routing', help: 'hold requests in the router while every eligible worker has more than X x max-num-batched-tokens of prefill booked', defaultHelp: 'default: off' }),
      }),
    ),
    policy: defaulted(
      oneOf(QUEUE_POLICIES, {
        default: DEFAULT_QUEUE_SETTINGS.policy,
        description: "Order within a priority class: 'fcfs' (arrival minus priority jump: tail TTFT), 'lcfs' (latest first), 'wspt' ((1 + priority jump) / uncached tokens: mean TTFT). Higher priority classes always go first.",
        ...cli({ flag: 'router-queue-policy', arg: 'P', group: 'Routing', help: 'router queue order within a priority class' }),
      }),
    ),
    maxRequests: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 10_000_000,
        default: DEFAULT_QUEUE_SETTINGS.maxRequests,
        description: 'Requests waiting at most per pool; beyond, 429 with Retry-After (or the lowest-ranked waiting request gives its place).',
        ...cli({ flag: 'router-queue-max-requests', arg: 'N', group: 'Routing', help: 'requests waiting at most per pool, 429 beyond' }),
      }),
    ),
    maxTokens: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        default: DEFAULT_QUEUE_SETTINGS.maxTokens,
        description: 'Uncached prompt tokens waiting at most per pool; beyond, 429 with Retry-After.',
        ...cli({ flag: 'router-queue-max-tokens', arg: 'N', group: 'Routing', help: 'uncached prompt tokens waiting at most per pool, 429 beyond' }),
      }),
    ),
    maxNumBatchedTokens: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 1 << 30,
        default: DEFAULT_QUEUE_SETTINGS.maxNumBatchedTokens,
        description: "The engines' max_num_batched_tokens (the prefill tokens one step takes), the unit of the threshold.",
        ...cli({ flag: 'max-num-batched-tokens', arg: 'N', group: 'Routing', help: "the engines' max_num_batched_tokens, the unit of --router-queue-threshold" }),
      }),
    ),
  },
  { additionalProperties: false, default: {}, description: 'The router queue: requests wait in the router, by priority, instead of piling onto busy engines.' },
);

/** Per request, aggregated on the decode worker when a remote prefill does not pay (Dynamo's conditional_prefill). */
export const ConditionalDisaggSchema = Type.Object(
  {
    enabled: defaulted(
      Type.Boolean({
        default: DEFAULT_CONDITIONAL_DISAGG.enabled,
        description: 'Decide per request whether to disaggregate (off: every request is disaggregated while a prefill worker can serve).',
        ...cli({ flag: 'conditional-disagg', group: 'Routing', help: 'serve a request aggregated on its decode worker when a remote prefill does not pay' }),
      }),
    ),
    bypassBelowTokens: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        default: DEFAULT_CONDITIONAL_DISAGG.bypassBelowTokens,
        description: "Serve aggregated below this many uncached prompt tokens on the decode worker (the transfer would cost more than the compute).",
        ...cli({ flag: 'disagg-bypass-below', arg: 'N', group: 'Routing', help: 'with --conditional-disagg: aggregated below N uncached prompt tokens' }),
      }),
    ),
    disaggAboveTokens: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        default: DEFAULT_CONDITIONAL_DISAGG.disaggAboveTokens,
        description: "Always disaggregate from this many uncached prompt tokens (a long prefill would stall the decode worker's streams).",
        ...cli({ flag: 'disagg-above', arg: 'N', group: 'Routing', help: 'with --conditional-disagg: always disaggregated from N uncached prompt tokens' }),
      }),
    ),
    queueAware: defaulted(
      Type.Boolean({
        default: DEFAULT_CONDITIONAL_DISAGG.queueAware,
        description: "Serve aggregated when the prefill worker's queued prefill plus this prompt exceed the decode worker's own.",
      }),
    ),
  },
  { additionalProperties: false, default: {}, description: 'Conditional disaggregation. Changeable at runtime: PUT /admin/conditional-disagg.' },
);

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
    blockGraceMs: defaulted(Type.Integer({ minimum: 0, maximum: 86_400_000, default: 30_000, description: 'A worker unhealthy this long loses its blocks from the index.' })),
  },
  { additionalProperties: false, default: {}, description: 'Health checking of the workers.' },
);

/** Passive ejection of failing workers (Envoy's outlier detection): routing/outlier-detection.ts. */
export const OutlierDetectionSchema = Type.Object(
  {
    enabled: defaulted(
      Type.Boolean({
        default: true,
        description: 'Take a worker out of selection at once after consecutive connect failures or 5xx answers, until its ejection time runs out or (connect failures) a health check passes.',
        ...cli({ flag: 'no-ejection', value: false, group: 'Operations', help: 'never eject a failing worker from selection between health checks' }),
      }),
    ),
    consecutiveConnectFailures: defaulted(
      Type.Integer({ minimum: 0, maximum: 1_000_000, default: 1, description: 'Consecutive legs the worker never got (connection refused, reset before the request was written, connect timeout) that eject it; 0: never for these.' }),
    ),
    consecutive5xx: defaulted(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 5, description: 'Consecutive 5xx answers that eject the worker; 0: never for these.' })),
    baseEjectionTimeMs: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 86_400_000,
        default: 30_000,
        description: "The first ejection's length; the n-th in a row (the worker kept failing after it came back) lasts n times this.",
        ...cli({ flag: 'ejection-base-ms', arg: 'N', group: 'Operations', help: 'a failing worker is ejected this long, n times this at its n-th ejection in a row' }),
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
  { additionalProperties: false, default: {}, description: 'Passive ejection (outlier detection): failing workers leave selection at once, not at the next health round.' },
);

/** Per API key limits, token buckets refilled continuously; a key's own limits (in the keys file) replace these. */
export const RateLimitSchema = Type.Object(
  {
    requestsPerMinute: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1e9,
        description: 'Requests per minute per API key (a burst of one minute\'s worth); above it, 429 with Retry-After.',
        ...cli({ flag: 'key-requests-per-minute', arg: 'N', group: 'Access', help: 'requests per minute per API key, 429 above', defaultHelp: 'default: no limit' }),
      }),
    ),
    tokensPerMinute: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1e12,
        description: 'Tokens per minute per API key: a request costs its prompt tokens plus its max_tokens (what it may generate), charged when it is admitted; above it, 429 with Retry-After.',
        ...cli({ flag: 'key-tokens-per-minute', arg: 'N', group: 'Access', help: 'tokens per minute per API key, a request costing prompt + max_tokens; 429 above', defaultHelp: 'default: no limit' }),
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
      description: 'The NATS servers the replicas share state through (JetStream on for sessions and the fleet): nats://host:port, several comma-separated for a NATS cluster.',
      ...cli({ flag: 'nats', arg: 'URL', group: 'Replicas', help: 'share bookings, session pins and admin fleet changes with the other replicas through this NATS server (JetStream on for the last two); several comma-separated for a NATS cluster' }),
    }),
    id: Type.Optional(
      Type.String({
        pattern: REPLICA_NAME,
        expected: '1 to 64 letters, digits, - or _',
        description: "This replica's id among its siblings (default: the host name and process id).",
        ...cli({ flag: 'replica-id', arg: 'ID', group: 'Replicas', help: "this replica's id among its siblings", defaultHelp: 'default: host name and process id' }),
      }),
    ),
    cluster: Type.Optional(
      Type.String({
        pattern: REPLICA_NAME,
        expected: '1 to 64 letters, digits, - or _',
        description: "The replicas that share state: those with the same cluster name on the same NATS (default: the first model's name, other characters replaced by _).",
        ...cli({ flag: 'replica-cluster', arg: 'NAME', group: 'Replicas', help: 'replicas with the same cluster name share state', defaultHelp: "default: the first model's name" }),
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
    batchMaxDelayMs: defaulted(Type.Integer({ minimum: 0, maximum: 1000, default: 1, description: 'Longest a booking event waits for others to share its message (0: sent at the end of the event loop turn).' })),
    connectTimeoutMs: defaulted(Type.Integer({ minimum: 100, maximum: 600_000, default: 2000, description: 'How long startup waits for NATS; without it the replica starts alone (degraded) and keeps trying.' })),
  },
  { additionalProperties: false, description: 'Router replicas acting as one: active bookings, session pins and fleet changes shared over NATS (off when absent).' },
);

/** TLS on the router's listeners. */
export const TlsSchema = Type.Object(
  {
    certFile: text({ description: 'PEM certificate (chain) file.', ...cli({ flag: 'tls-cert', arg: 'FILE', group: 'Listening', help: 'serve HTTPS with this PEM certificate (chain) file (needs --tls-key)' }) }),
    keyFile: text({ description: 'PEM private key file.', ...cli({ flag: 'tls-key', arg: 'FILE', group: 'Listening', help: 'the PEM private key of --tls-cert' }) }),
  },
  { additionalProperties: false, description: 'Serve HTTPS: every listener of the router (the admin listener too) uses this certificate.' },
);

/** The router's configuration: a JSON file (`kvroute serve --config`), or what a library user passes to createRouter. */
export const RouterConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this file, for editors; kvroute ignores it.' })),
    host: defaulted(
      text({ default: '127.0.0.1', description: 'Interface the router listens on.', ...cli({ flag: 'host', arg: 'HOST', env: 'HOST', group: 'Listening', help: 'interface' }) }),
    ),
    port: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 65535,
        default: 8000,
        description: 'Port the router listens on; 0 lets the system choose a free one.',
        ...cli({ flag: 'port', arg: 'PORT', env: 'PORT', group: 'Listening', help: 'port, 0 = any free one' }),
      }),
    ),
    model: Type.Optional(text({ description: 'The served model name, when there is one (else models).' })),
    models: defaulted(
      Type.Array(text(), {
        minItems: 1,
        default: ['kvroute-sim'],
        expected: 'a non-empty array of model names',
        description: 'Served model names; the first is the model of requests that name none.',
        ...cli({ flag: 'model', arg: 'NAME', repeatable: true, group: 'Routing', help: 'served model name, repeatable' }),
      }),
    ),
    tokenizer: defaulted(
      Type.Union([text(), Type.Object({ type: Type.Literal('byte') }, { additionalProperties: false }), Type.Object({ type: Type.Literal('huggingface'), path: text() }, { additionalProperties: false })], {
        default: 'byte',
        expected: "'byte', a HuggingFace model directory, or { type, path }",
        description: "'byte' (the built-in byte tokenizer of the simulated fleet), a HuggingFace model directory (tokenizer.json, tokenizer_config.json), or { type: 'byte' | 'huggingface', path }.",
        ...cli({
          flag: 'tokenizer',
          arg: 'DIR',
          group: 'Routing',
          help: "HuggingFace model directory (tokenizer.json, tokenizer_config.json), or 'byte'",
          defaultHelp: 'default: the built-in byte tokenizer of the simulated fleet',
        }),
      }),
    ),
    chatTemplate: Type.Optional(
      text({
        description: "Jinja chat template overriding the tokenizer's own (the template itself, not a path).",
        ...cli({ flag: 'chat-template', arg: 'FILE', readsFile: true, group: 'Routing', help: "Jinja chat template file overriding the tokenizer's", defaultHelp: "default: the tokenizer's own, else ChatML" }),
      }),
    ),
    blockSize: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: MAX_BLOCK_SIZE,
        default: 16,
        description: "KV block size in tokens; must equal the engines'.",
        ...cli({ flag: 'block-size', arg: 'B', group: 'Routing' }),
      }),
    ),
    indexerMode: defaulted(
      oneOf(INDEXER_MODES, {
        default: 'events',
        description: "'events': the index follows the workers' KV events; 'approximate': without KV events, caches are predicted from routing decisions.",
        ...cli({ flag: 'approximate', value: 'approximate', group: 'Routing', help: 'no KV events: predict caches from routing decisions' }),
      }),
    ),
    lowerTiers: defaulted(
      Type.Boolean({
        default: true,
        description:
          "Events mode: index the blocks workers report on lower tiers (KV events with medium CPU, CPU_PINNED, CPU_TIER1: host; CPU_TIER2, DISK: disk; EXTERNAL: external) beside the GPU's, credited in the cost at the routing's host/disk/externalCacheCredit. false: such events are counted, never indexed.",
        ...cli({ flag: 'no-lower-tiers', value: false, group: 'Routing', help: 'ignore KV blocks the workers report on CPU, disk or external pools' }),
      }),
    ),
    maxIndexedBlocks: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 2 ** 40, description: "Events mode: cap on each pool's index in (worker, dp rank, block) entries, least recently matched evicted first (no cap when absent)." }),
    ),
    routing: defaulted(PoolRoutingSchema),
    prefillRouting: Type.Optional(PrefillRoutingSchema),
    enforceDisagg: defaulted(
      Type.Boolean({
        default: false,
        description: 'Fail requests instead of serving them aggregated when no prefill worker exists.',
        ...cli({ flag: 'enforce-disagg', group: 'Routing', help: 'fail requests instead of serving them aggregated without prefill workers' }),
      }),
    ),
    fallbackToAggregated: defaulted(
      Type.Boolean({
        default: true,
        description: 'Serve a request on its decode worker alone when its prefill leg fails.',
        ...cli({ flag: 'no-fallback', value: false, group: 'Routing', help: 'fail a request whose prefill leg fails instead of serving it aggregated' }),
      }),
    ),
    trackOutputBlocks: defaulted(
      Type.Boolean({
        default: false,
        description:
          "Book the decode blocks a streamed request's output fills as it generates (one token per streamed token chunk); with an expected output length (the expected_output_tokens hint, else max_tokens) its blocks weigh less as it nears that length.",
        ...cli({ flag: 'track-output-blocks', group: 'Routing', help: "book the decode blocks a request's output fills as it streams" }),
      }),
    ),
    routerQueue: defaulted(RouterQueueSchema),
    conditionalDisagg: defaulted(ConditionalDisaggSchema),
    sessionAffinity: Type.Optional(
      Type.Union([Type.Boolean(), SessionAffinitySchema], {
        expected: 'true, false or an object',
        description:
          "Requests carrying the session header go to the workers their session's earlier requests went to while those can serve (explicit worker hints win). true: with the defaults; an object: the settings to change; off when absent or false.",
      }),
    ),
    maxBodyBytes: defaulted(
      Type.Integer({
        minimum: 1024,
        maximum: 1 << 30,
        default: 4 * 1024 * 1024,
        description: 'Request body limit in bytes; a larger body gets 413.',
        ...cli({ flag: 'max-body-bytes', arg: 'N', group: 'Operations', help: 'request body limit, 413 above' }),
      }),
    ),
    apiKeysFile: Type.Optional(
      text({
        description:
          "A file of API keys for the OpenAI routes (/v1/*): one `name:key` per line (# comments), or JSON [{ name, key, requestsPerMinute?, tokensPerMinute? }]. With keys, a request needs `Authorization: Bearer <key>` (401 otherwise); without, the routes are open. The key's name, never the key, shows in logs and metrics.",
        ...cli({
          flag: 'api-keys-file',
          arg: 'FILE',
          env: 'KVROUTE_API_KEYS_FILE',
          group: 'Access',
          help: 'API keys of the OpenAI routes: `name:key` lines or JSON [{name, key, requestsPerMinute?, tokensPerMinute?}]; 401 without a valid Bearer key. KVROUTE_API_KEYS may hold the same text instead of a file',
          defaultHelp: 'default: no keys, the routes are open',
        }),
      }),
    ),
    rateLimit: defaulted(RateLimitSchema),
    adminToken: Type.Optional(
      Type.String({
        description:
          'Bearer token of the admin API (empty: none). Without one the admin API answers loopback clients only, and a router listening beyond loopback serves it on a listener of its own on 127.0.0.1.',
        ...cli({
          flag: 'admin-token',
          arg: 'TOKEN',
          env: 'KVROUTE_ADMIN_TOKEN',
          group: 'Access',
          help: 'bearer token of /admin (on the command line it shows in `ps`: prefer --admin-token-file or the environment variable); without one, the admin API answers loopback clients only, and when --host is not a loopback address it is served on its own listener on 127.0.0.1 instead',
        }),
      }),
    ),
    adminTokenFile: Type.Optional(
      text({
        description: 'A file holding the admin API bearer token (surrounding whitespace ignored), instead of adminToken.',
        ...cli({ flag: 'admin-token-file', arg: 'FILE', env: 'KVROUTE_ADMIN_TOKEN_FILE', group: 'Access', help: 'a file holding the bearer token of /admin (not shown by `ps`)' }),
      }),
    ),
    adminPort: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 65535,
        description: 'Port of that loopback admin listener (default: port + 1; 0 lets the system choose).',
        ...cli({ flag: 'admin-port', arg: 'PORT', group: 'Access', help: 'port of that loopback admin listener', defaultHelp: 'default: --port + 1; 0 = any' }),
      }),
    ),
    tls: Type.Optional(TlsSchema),
    reusePort: defaulted(
      Type.Boolean({
        default: false,
        description: "Share the port with other processes (SO_REUSEPORT: the kernel splits connections between them). Off: a port another process holds is refused at startup.",
        ...cli({ flag: 'reuse-port', group: 'Listening', help: 'share the port with other processes listening on it (SO_REUSEPORT); without it a busy port is an error' }),
      }),
    ),
    maxTokensLimit: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 2 ** 32 - 1,
        default: 1_048_576,
        description: 'Largest max_tokens / max_completion_tokens a request may ask for; above it, 400. The default is the longest context windows served today (about 1M tokens): no answer can be longer.',
        ...cli({ flag: 'max-tokens-limit', arg: 'N', group: 'Operations', help: 'largest max_tokens a request may ask for, 400 above' }),
      }),
    ),
    logLevel: defaulted(
      oneOf(LOG_LEVELS, {
        default: 'info',
        description: "Log level of kvroute serve's logger (JSON lines on stderr, pretty on a terminal). info logs state changes (startup, worker health, engine restarts, KV event gaps, 5xx answers, drain), never a line per request; debug adds one per request.",
        ...cli({ flag: 'log-level', arg: 'LEVEL', env: 'KVROUTE_LOG_LEVEL', group: 'Operations', help: 'log level' }),
      }),
    ),
    drainTimeoutMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        default: 30_000,
        description: 'On SIGTERM or SIGINT, how long requests in flight may take to finish before their streams are cut (an error frame) and the process exits.',
        ...cli({ flag: 'drain-timeout-ms', arg: 'N', group: 'Operations', help: 'on SIGTERM/SIGINT, how long requests in flight may finish (then streams end with an error frame)' }),
      }),
    ),
    health: defaulted(HealthSchema),
    maxRetries: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 2,
        description:
          'A leg (prefill or decode) whose engine certainly never got it (connection refused, reset before the request was written, DNS or connect timeout) is sent to the next best worker, at most this many times; 0: never. Nothing is retried once an engine may have accepted it.',
        ...cli({ flag: 'max-retries', arg: 'N', group: 'Operations', help: 'send a leg whose engine never got it to the next best worker, at most N times' }),
      }),
    ),
    outlierDetection: defaulted(OutlierDetectionSchema),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 32 - 1, description: 'Seed of routing ties, for reproducible runs (random when absent).' })),
    replicas: Type.Optional(ReplicasSchema),
    workers: defaulted(
      Type.Array(WorkerSchema, {
        default: [],
        description: 'The engine workers; more can be added and removed at runtime through /admin/workers.',
        ...cli({ flag: 'worker', arg: 'SPEC', repeatable: true, group: 'Fleet', help: 'add a worker (repeatable), e.g. id=1,role=prefill,kind=vllm,url=http://h:8000,events=tcp://h:5557' }),
      }),
    ),
  },
  { additionalProperties: false, title: 'kvroute router configuration' },
);

/** `kvroute serve`'s simulated fleet, started in the router's process when no workers are configured. */
export const EmbeddedFleetSchema = Type.Object(
  {
    prefill: defaulted(
      Type.Integer({ minimum: 0, maximum: 64, default: 2, description: 'Simulated prefill workers; 0 gives aggregated workers only.', ...cli({ flag: 'embedded-prefill', arg: 'N', group: 'Fleet', help: 'simulated prefill workers (0 = aggregated workers only)' }) }),
    ),
    decode: defaulted(Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Simulated decode workers (aggregated when there are no prefill workers).', ...cli({ flag: 'embedded-decode', arg: 'N', group: 'Fleet', help: 'simulated decode (or aggregated) workers' }) })),
    style: defaulted(oneOf(ENGINE_KINDS, { default: 'vllm', description: 'The engine whose prefill/decode handoff the simulated workers speak.', ...cli({ flag: 'embedded-style', arg: 'S', group: 'Fleet', help: 'handoff style of the simulated fleet' }) })),
    speedup: defaulted(
      Type.Number({ exclusiveMinimum: 0, default: 1, description: 'Simulated engines run this many times faster than real time.', ...cli({ flag: 'speedup', arg: 'X', group: 'Fleet', help: 'simulated engines run X times faster than real time' }) }),
    ),
  },
  { additionalProperties: false },
);
