// What the HTTP layer needs from the routing layer, in one interface. wiring.ts builds it from the
// indexers, routing cores, prefill router and event ingest; router.ts only sees this.
import type { MetricsSources } from '../observability/metrics.js';
import type { RoutingHints } from '../openai/request.js';
import type { IngestPort, PoolName, PoolPort } from '../fleet/registry.js';
import type { RoutedResponse, RouterRequest } from '../../routing/router-request.js';
import type { ServeMode } from '../../core/vocabulary.js';
import type { ModeReason } from '../../routing/prefill/mode.js';
import type { SchedulingPort } from '../fleet/scheduling.js';
import type { ReplicaPort, WarmStartPort } from '../replicas/ports.js';

/** One request as the prefill router takes it, and its answer. */
export type DispatchRequest = RouterRequest;
export type DispatchResponse = RoutedResponse;

export interface CandidateExplanation {
  worker: number;
  dp_rank: number;
  overlap_blocks: number;
  /** Blocks after the GPU prefix the worker can reload from host memory, disk, an external pool. */
  lower_tier_blocks: { host: number; disk: number; external: number };
  prefill_blocks: number;
  decode_blocks: number;
  cost: number;
}

export interface LegExplanation {
  worker: number;
  dp_rank: number;
  policy: string;
  overlap_blocks: number;
  lower_tier_blocks: { host: number; disk: number; external: number };
  cached_tokens: number;
  prefill_tokens: number;
  /** The ttft policy's predicted time to first token on the chosen worker, ms (ttft only). */
  predicted_ttft_ms?: number;
  candidates: CandidateExplanation[];
  timings_us: { hash: number; match: number; select: number; total: number };
}

/** POST /v1/route: what the router would do, without doing it. */
export interface RouteExplanation {
  request_id: string;
  prompt_tokens: number;
  block_size: number;
  mode: Exclude<ServeMode, 'fallback'>;
  /** Why that mode (conditional disaggregation). */
  mode_reason: ModeReason;
  prefill: LegExplanation | null;
  decode: LegExplanation;
}

/** A request among the latest decisions (the live page): its legs explained, how it ended once it did. */
export interface RecentDecision {
  requestId: string;
  /** Date.now() of its first leg. */
  at: number;
  legs: Array<LegExplanation & { pool: string; at: number }>;
  done?: { at: number; mode: string; reason: string; outcome: string; ttftMs?: number; outputTokens: number };
}

export interface Backend {
  dispatch(req: DispatchRequest): Promise<DispatchResponse>;
  /** A routing query on the live state: books nothing, advances nothing. */
  explain(tokens: Uint32Array, hints: RoutingHints, requestId: string): RouteExplanation;
  pools: Record<PoolName, PoolPort>;
  ingest: IngestPort;
  /** False when requests cannot be served (e.g. disaggregation enforced and no prefill worker). */
  canServe(): boolean;
  /** The latest requests routed, newest first, at most `limit` (kept in a small ring). */
  recentDecisions(limit: number): RecentDecision[];
  /** Blocks the pool's index holds for a worker, over its dp ranks. */
  indexedBlocks(pool: PoolName, worker: number, dpSize: number): number;
  metricsSources: Omit<MetricsSources, 'workerStates'>;
  /** The router queues and conditional disaggregation, changeable at runtime (the admin API). */
  scheduling: SchedulingPort;
  /** This replica among its siblings, when router replicas share state (config.replicas). */
  replicas?: ReplicaPort;
  /** Warm start (with replicas): ready once the restored index caught up. */
  warmStart?: WarmStartPort;
  close(): Promise<void>;
}
