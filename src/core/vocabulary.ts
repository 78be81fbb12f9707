// The names kvroute's layers share, each defined here once: the list for checks and help texts,
// the type from the list. Engines, routing, the server's configuration and the simulator import
// them from here.

/** What a worker does in a disaggregated fleet; aggregated workers do both phases. */
export const WORKER_ROLES = ['aggregated', 'prefill', 'decode'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/** The engine a worker runs, which decides its prefill/decode handoff protocol (PROTOCOLS.md 3). */
export const ENGINE_KINDS = ['vllm', 'sglang', 'trtllm'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/** The routing pools: prefill workers in one, decode and aggregated workers in the other. */
export const POOL_NAMES = ['prefill', 'decode'] as const;
export type PoolName = (typeof POOL_NAMES)[number];

/** Worker selection policies of a RoutingCore (native/src/select). */
export const POLICY_NAMES = ['kv', 'round_robin', 'random', 'least_loaded', 'direct', 'ttft'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/** How a KvIndexer learns what the workers cache: from their KV events, or from routing decisions. */
export const INDEXER_MODES = ['events', 'approximate'] as const;
export type IndexerMode = (typeof INDEXER_MODES)[number];

/** How a request was served: on one worker, split into prefill and decode, or on the decode worker after the prefill leg failed. */
export const SERVE_MODES = ['aggregated', 'disaggregated', 'fallback'] as const;
export type ServeMode = (typeof SERVE_MODES)[number];

/** Orders of the router queue (Dynamo's router_queue_policy): first come, last come, Smith's rule. */
export const QUEUE_POLICIES = ['fcfs', 'lcfs', 'wspt'] as const;
export type QueuePolicy = (typeof QUEUE_POLICIES)[number];
