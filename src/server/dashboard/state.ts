// GET /dashboard/state: what the live page shows, as JSON (documented in docs/observability.md,
// "Live page"). app/ assembles it from the registry, the pools, the metrics history and the
// decision log; this file only names its shape.
import type { HistoryPoint } from '../observability/metrics-history.js';

export interface DashboardWorker {
  id: number;
  role: string;
  kind: string;
  dp_size: number;
  /** healthy, unhealthy or draining. */
  state: string;
  in_selection: boolean;
  ejected: boolean;
  /** Requests the router has in flight on it (booked). */
  in_flight: number;
  /** Booked load over its dp ranks: prompt tokens to prefill, decode blocks. */
  prefill_tokens: number;
  decode_blocks: number;
  /** KV blocks the pool's index holds for it. */
  indexed_blocks: number;
}

export interface DashboardPool {
  name: 'prefill' | 'decode';
  policy: string;
  indexed_blocks: number;
  queue: { depth: number; tokens: number; oldest_wait_ms: number; rejected: Record<string, number> };
  workers: DashboardWorker[];
}

export interface DashboardLeg {
  pool: string;
  /** ms since the epoch, when it was booked. */
  at: number;
  worker: number;
  dp_rank: number;
  policy: string;
  overlap_blocks: number;
  cached_tokens: number;
  prefill_tokens: number;
  predicted_ttft_ms?: number;
  /** Best first, at most 8, the chosen worker among them: the policy's cost of each. */
  candidates: Array<{ worker: number; dp_rank: number; overlap_blocks: number; prefill_blocks: number; decode_blocks: number; cost: number }>;
  timings_us: { hash: number; match: number; select: number; total: number };
}

export interface DashboardDecision {
  request_id: string;
  at: number;
  legs: DashboardLeg[];
  /** Absent while the request runs. */
  mode?: string;
  reason?: string;
  outcome?: string;
  ttft_ms?: number;
  output_tokens?: number;
}

export interface DashboardState {
  /** ms since the epoch. */
  at: number;
  /** As /health: ready, warming, unavailable, draining. */
  status: string;
  models: string[];
  block_size: number;
  pools: DashboardPool[];
  /** The last minutes, one point per interval, oldest first. */
  history: { interval_ms: number; points: HistoryPoint[] };
  /** The latest requests routed, newest first. */
  decisions: DashboardDecision[];
}
