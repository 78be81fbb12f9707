// Every setting of the router, declared once: its type, range, default and description (the config
// file, `POST /admin/workers` and the published JSON Schema), and where it has one, its
// `kvroute serve` flag (declare.ts). A new setting is one entry here or in the part it belongs to
// (worker-schema.ts, routing-schema.ts, operations-schema.ts): config.ts carries it through, the
// flag and its --help line come with its `cli` annotation.
import { Type } from '@sinclair/typebox';
import { ENGINE_KINDS, INDEXER_MODES } from '../../core/vocabulary.js';
import { LOG_LEVELS } from '../../util/logger.js';
import { MAX_BLOCK_SIZE } from '../../util/validate.js';
import { defaulted, oneOf } from './declare.js';
import { cli, text } from './schema-common.js';
import { WorkerSchema } from './worker-schema.js';
import { PoolRoutingSchema, PrefillRoutingSchema, SessionAffinitySchema, RouterQueueSchema, ConditionalDisaggSchema } from './routing-schema.js';
import { HealthSchema, OutlierDetectionSchema, RateLimitSchema, ReplicasSchema, TlsSchema, TracingSchema } from './operations-schema.js';
import { DiscoverySchema } from './discovery-schema.js';

export { WorkerSchema } from './worker-schema.js';
export {
  TtftModelSchema,
  PoolRoutingSchema,
  PrefillRoutingSchema,
  SessionAffinitySchema,
  RouterQueueSchema,
  ConditionalDisaggSchema,
} from './routing-schema.js';
export { HealthSchema, OutlierDetectionSchema, RateLimitSchema, ReplicasSchema, TlsSchema, TracingSchema, OTLP_PROTOCOLS } from './operations-schema.js';
export { DiscoverySchema, KubernetesDiscoverySchema } from './discovery-schema.js';

/** The router's configuration: a JSON file (`kvroute serve --config`), or what a library user passes to createRouter. */
export const RouterConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this file, for editors; kvroute ignores it.' })),
    host: defaulted(
      text({
        default: '127.0.0.1',
        description: 'Interface the router listens on.',
        ...cli({ flag: 'host', arg: 'HOST', env: 'HOST', group: 'Listening', help: 'interface' }),
      }),
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
      Type.Union(
        [
          text(),
          Type.Object({ type: Type.Literal('byte') }, { additionalProperties: false }),
          Type.Object({ type: Type.Literal('huggingface'), path: text() }, { additionalProperties: false }),
        ],
        {
          default: 'byte',
          expected: "'byte', a HuggingFace model directory, or { type, path }",
          description:
            "'byte' (the built-in byte tokenizer of the simulated fleet), a HuggingFace model directory (tokenizer.json, tokenizer_config.json), or { type: 'byte' | 'huggingface', path }.",
          ...cli({
            flag: 'tokenizer',
            arg: 'DIR',
            group: 'Routing',
            help: "HuggingFace model directory (tokenizer.json, tokenizer_config.json), or 'byte'",
            defaultHelp: 'default: the built-in byte tokenizer of the simulated fleet',
          }),
        },
      ),
    ),
    chatTemplate: Type.Optional(
      text({
        description: "Jinja chat template overriding the tokenizer's own (the template itself, not a path).",
        ...cli({
          flag: 'chat-template',
          arg: 'FILE',
          readsFile: true,
          group: 'Routing',
          help: "Jinja chat template file overriding the tokenizer's",
          defaultHelp: "default: the tokenizer's own, else ChatML",
        }),
      }),
    ),
    tokenizerCacheBytes: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 2 ** 40,
        default: 256 * 1024 * 1024,
        description:
          "Bytes of the tokenizer prefix cache: a prompt that begins with a recent prompt's rendered prefix (up to a message boundary, cut only where the tokenizer cannot merge across) reuses that prefix's token ids and tokenizes only the rest; the ids are always those of the whole prompt. Least recently used prefixes go first. 0 turns it off.",
        ...cli({ flag: 'tokenizer-cache-bytes', arg: 'N', group: 'Routing', help: 'bytes of the tokenizer prefix cache (0: off)' }),
      }),
    ),
    offThreadPromptBytes: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 1 << 30,
        default: 16 * 1024,
        description:
          'Request bodies of at least this many bytes are read, rendered and tokenized on a libuv thread, so a long prompt does not hold up the event loop (other streams, health checks); shorter ones are read inline, which costs less than the hand-off.',
        ...cli({ flag: 'off-thread-prompt-bytes', arg: 'N', group: 'Operations', help: 'bodies this large or larger are tokenized off the event loop' }),
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
      Type.Integer({
        minimum: 1,
        maximum: 2 ** 40,
        description: "Events mode: cap on each pool's index in (worker, dp rank, block) entries, least recently matched evicted first (no cap when absent).",
      }),
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
    forwardPriority: defaulted(
      Type.Boolean({
        default: false,
        description:
          "Forward each request's priority class to its engine in the body's `priority` field (negated for vLLM, whose lower values go first; as is for SGLang; not to TensorRT-LLM). Only for engines started with priority scheduling (vLLM --scheduling-policy priority, SGLang --enable-priority-scheduling): vLLM refuses a non-zero priority otherwise.",
        ...cli({
          flag: 'forward-priority',
          group: 'Routing',
          help: 'forward request priorities to engines that schedule by priority (vLLM --scheduling-policy priority, SGLang --enable-priority-scheduling)',
        }),
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
        ...cli({
          flag: 'admin-token-file',
          arg: 'FILE',
          env: 'KVROUTE_ADMIN_TOKEN_FILE',
          group: 'Access',
          help: 'a file holding the bearer token of /admin (not shown by `ps`)',
        }),
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
        description:
          'Share the port with other processes (SO_REUSEPORT: the kernel splits connections between them). Off: a port another process holds is refused at startup.',
        ...cli({
          flag: 'reuse-port',
          group: 'Listening',
          help: 'share the port with other processes listening on it (SO_REUSEPORT); without it a busy port is an error',
        }),
      }),
    ),
    maxTokensLimit: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 2 ** 32 - 1,
        default: 1_048_576,
        description:
          'Largest max_tokens / max_completion_tokens a request may ask for; above it, 400. The default is the longest context windows served today (about 1M tokens): no answer can be longer.',
        ...cli({ flag: 'max-tokens-limit', arg: 'N', group: 'Operations', help: 'largest max_tokens a request may ask for, 400 above' }),
      }),
    ),
    logLevel: defaulted(
      oneOf(LOG_LEVELS, {
        default: 'info',
        description:
          "Log level of kvroute serve's logger (JSON lines on stderr, pretty on a terminal). info logs state changes (startup, worker health, engine restarts, KV event gaps, 5xx answers, drain), never a line per request; debug adds one per request.",
        ...cli({ flag: 'log-level', arg: 'LEVEL', env: 'KVROUTE_LOG_LEVEL', group: 'Operations', help: 'log level' }),
      }),
    ),
    drainTimeoutMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        default: 30_000,
        description:
          'On SIGTERM or SIGINT, how long requests in flight may take to finish before their streams are cut (an error frame) and the process exits.',
        ...cli({
          flag: 'drain-timeout-ms',
          arg: 'N',
          group: 'Operations',
          help: 'on SIGTERM/SIGINT, how long requests in flight may finish (then streams end with an error frame)',
        }),
      }),
    ),
    health: defaulted(HealthSchema),
    tracing: Type.Optional(TracingSchema),
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
    allowEmptyFleet: defaulted(
      Type.Boolean({
        default: false,
        description:
          'Start with no workers: they arrive at runtime (POST /admin/workers); until one can serve, requests answer 503 no_eligible_worker and /health 503. Without it, kvroute serve refuses an empty fleet.',
        ...cli({ flag: 'allow-empty-fleet', group: 'Fleet', help: 'start with no workers and take them from the admin API (503 until one can serve)' }),
      }),
    ),
    workers: defaulted(
      Type.Array(WorkerSchema, {
        default: [],
        description: 'The engine workers; more can be added and removed at runtime through /admin/workers.',
        ...cli({
          flag: 'worker',
          arg: 'SPEC',
          repeatable: true,
          group: 'Fleet',
          help: 'add a worker (repeatable), e.g. id=1,role=prefill,kind=vllm,url=http://h:8000,events=tcp://h:5557',
        }),
      }),
    ),
    discovery: Type.Optional(DiscoverySchema),
  },
  { additionalProperties: false, title: 'kvroute router configuration' },
);

/** `kvroute serve --embedded`'s simulated fleet, started in the router's process. */
export const EmbeddedFleetSchema = Type.Object(
  {
    prefill: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 64,
        default: 2,
        description: 'Simulated prefill workers; 0 gives aggregated workers only.',
        ...cli({ flag: 'embedded-prefill', arg: 'N', group: 'Fleet', help: 'simulated prefill workers (0 = aggregated workers only)' }),
      }),
    ),
    decode: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        default: 2,
        description: 'Simulated decode workers (aggregated when there are no prefill workers).',
        ...cli({ flag: 'embedded-decode', arg: 'N', group: 'Fleet', help: 'simulated decode (or aggregated) workers' }),
      }),
    ),
    style: defaulted(
      oneOf(ENGINE_KINDS, {
        default: 'vllm',
        description: 'The engine whose prefill/decode handoff the simulated workers speak.',
        ...cli({ flag: 'embedded-style', arg: 'S', group: 'Fleet', help: 'handoff style of the simulated fleet' }),
      }),
    ),
    speedup: defaulted(
      Type.Number({
        exclusiveMinimum: 0,
        default: 1,
        description: 'Simulated engines run this many times faster than real time.',
        ...cli({ flag: 'speedup', arg: 'X', group: 'Fleet', help: 'simulated engines run X times faster than real time' }),
      }),
    ),
    offloadBlocks: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 2 ** 28,
        description:
          'A CPU offload tier of this many blocks on each simulated engine: evicted GPU blocks move there (KV events with medium CPU) and are reloaded over PCIe instead of recomputed. Absent or 0: none.',
        ...cli({ flag: 'embedded-offload-blocks', arg: 'N', group: 'Fleet', help: 'a CPU offload tier of N blocks on each simulated engine' }),
      }),
    ),
  },
  { additionalProperties: false },
);
