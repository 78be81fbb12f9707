// The routing settings of a pool: selection, the ttft model, session affinity, the router queue and
// conditional disaggregation.
import { Type, type TSchema } from '@sinclair/typebox';
import { POLICY_NAMES, QUEUE_POLICIES } from '../../core/vocabulary.js';
import { DEFAULT_CONDITIONAL_DISAGG } from '../../routing/prefill/mode.js';
import { DEFAULT_QUEUE_SETTINGS } from '../../routing/queue/admission-queue.js';
import { defaulted, oneOf, type Annotations } from './declare.js';
import { cli } from './schema-common.js';

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

const finite = (description: string) => Type.Optional(Type.Number({ minimum: -1e12, maximum: 1e12, description }));
const perToken = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1e6, description }));

/** The ttft policy's model of the pool's engines; what it leaves out is the library's default (Dynamo's mocker fit, vLLM's 8192-token budget). */
export const TtftModelSchema = Type.Object(
  {
    prefill: Type.Optional(
      Type.Object(
        { a: finite('ms per token squared'), b: finite('ms per token'), c: finite('ms per step') },
        { additionalProperties: false, description: 'A prefill step of N tokens takes a N^2 + b N + c ms.' },
      ),
    ),
    decode: Type.Optional(
      Type.Object(
        { a: finite('ms per usage squared'), b: finite('ms per usage'), c: finite('ms'), minMs: perToken('the shortest decode pass, ms') },
        { additionalProperties: false, description: 'A decode pass at KV usage u (0..1) takes max(minMs, a u^2 + b u + c) ms.' },
      ),
    ),
    maxNumBatchedTokens: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: "Tokens one engine step computes at most (vLLM's max_num_batched_tokens)." }),
    ),
    reloadMsPerToken: Type.Optional(
      Type.Object(
        { host: perToken('from host memory'), disk: perToken('from disk'), external: perToken('from an external pool') },
        { additionalProperties: false, description: 'Milliseconds to reload one token of KV from each lower tier.' },
      ),
    ),
    transferMsPerToken: perToken('Milliseconds to receive one token of KV from a prefill worker (decode pools of a disaggregated fleet).'),
  },
  {
    additionalProperties: false,
    description: "The ttft policy's timing model of the pool's engines (the default is Dynamo's mocker fit: set it from your engines' measured step times).",
  },
);

/** One routing pool's selection settings. */
export const PoolRoutingSchema = Type.Object(
  {
    policy: defaulted(
      oneOf(POLICY_NAMES, {
        default: 'ttft',
        description:
          "Worker selection policy: 'ttft' (each worker's predicted time to first token: no weight to tune; the default), 'kv' (Dynamo's cost), 'round_robin', 'random', 'least_loaded', 'direct' (the request names the worker).",
        ...cli({ flag: 'policy', arg: 'P', group: 'Routing', help: 'decode/aggregated pool policy' }),
      }),
    ),
    overlapScoreCredit: defaulted(Type.Number({ minimum: 0, maximum: 1e6, default: 1, description: 'Prefill blocks each cached block is worth in the cost.' })),
    prefillLoadScale: defaulted(Type.Number({ minimum: 0, maximum: 1e6, default: 1, description: "Weight of a worker's booked prefill load in the cost." })),
    temperature: defaulted(
      Type.Number({ minimum: 0, maximum: 1e6, default: 0, description: 'Softmax temperature over costs; 0 picks the lowest cost, exact ties at random.' }),
    ),
    hostCacheCredit: defaulted(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        default: 0.75,
        description:
          "Prefill blocks each block a worker can reload from host memory (KV events with medium CPU) is worth in the cost: Dynamo's host_cache_hit_weight.",
      }),
    ),
    diskCacheCredit: defaulted(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        default: 0.25,
        description: "The same for a block on local disk (medium DISK, CPU_TIER2): Dynamo's disk_cache_hit_weight.",
      }),
    ),
    externalCacheCredit: defaulted(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        default: 0.25,
        description: 'The same for a block in an external pool (medium EXTERNAL): Dynamo credits it as disk.',
      }),
    ),
    ttftModel: Type.Optional(TtftModelSchema),
    busyDecodeFraction: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1e6, description: 'Leave out a worker whose decode blocks reach this fraction of its kvCapacityBlocks.' }),
    ),
    busyPrefillTokens: Type.Optional(
      Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Leave out a worker with this many booked prefill tokens.' }),
    ),
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
  const s = Type.Partial(PoolRoutingSchema, {
    additionalProperties: false,
    description: 'Routing of the prefill pool; what it leaves out is taken from routing.',
  });
  for (const [key, field] of Object.entries(s.properties) as Array<[string, TSchema & Annotations & { default?: unknown }]>) {
    delete field.default;
    delete field.cli;
    if (key === 'policy')
      field.cli = { flag: 'prefill-policy', arg: 'P', group: 'Routing', help: 'prefill pool policy', defaultHelp: 'default: same as --policy' };
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
    maxSessions: defaulted(
      Type.Integer({ minimum: 1, maximum: 10_000_000, default: 100_000, description: 'Sessions remembered at most; the least recently used go first.' }),
    ),
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
        ...cli({
          flag: 'router-queue-threshold',
          arg: 'X',
          group: 'Routing',
          help: 'hold requests in the router while every eligible worker has more than X x max-num-batched-tokens of prefill booked',
          defaultHelp: 'default: off',
        }),
      }),
    ),
    policy: defaulted(
      oneOf(QUEUE_POLICIES, {
        default: DEFAULT_QUEUE_SETTINGS.policy,
        description:
          "Order within a priority class: 'fcfs' (arrival minus priority jump: tail TTFT), 'lcfs' (latest first), 'wspt' ((1 + priority jump) / uncached tokens: mean TTFT). Higher priority classes always go first.",
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
        ...cli({
          flag: 'max-num-batched-tokens',
          arg: 'N',
          group: 'Routing',
          help: "the engines' max_num_batched_tokens, the unit of --router-queue-threshold",
        }),
      }),
    ),
    maxWaitMs: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 86_400_000,
        description:
          'Longest wait in the router queue, ms: a request whose estimated wait (uncached tokens ranked before it over the recent drain rate) is longer is refused at once, and one that has waited this long leaves; both 429 with Retry-After. No limit when absent.',
        ...cli({
          flag: 'router-queue-max-wait-ms',
          arg: 'MS',
          group: 'Routing',
          help: 'refuse (429) a request the router queue would hold longer than MS, shed one that waited MS',
          defaultHelp: 'default: no limit',
        }),
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
        description: 'Serve aggregated below this many uncached prompt tokens on the decode worker (the transfer would cost more than the compute).',
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
