// Per-policy figures of a replay, in the JSON shape other tools read (snake_case keys).
import { summarize } from './stats.js';
import type { FleetRun } from './virtual-fleet.js';

export interface PolicySummary {
  requests: number;
  completed: number;
  refused: number;
  ttft_ms: { p50: number; p90: number; p99: number; mean: number };
  itl_ms: { p50: number; p90: number };
  e2e_ms: { p50: number; p90: number };
  /** Engine-reported cached prompt tokens / prompt tokens of completed requests. */
  hit_rate: number;
  throughput_rps: number;
  /** Mean over time of max / mean booked prefill tokens across workers. */
  load_spread: number;
  simulated_s: number;
  wall_s: number;
  /** TTFT p90 per priority class, when the requests had more than one. */
  ttft_p90_ms_by_priority?: Record<string, number>;
  /** The router queues, when any request waited: how many did, the longest wait, refusals by reason. */
  queue?: { queued: number; rejected: Record<string, number> };
  /** Mode decisions by reason (x-kvroute-mode-reason), those that happened. */
  mode_reasons?: Record<string, number>;
  /**
   * With a CPU offload tier: the engines' prompt tokens found on the GPU and reloaded from the CPU
   * (shares of the prompt tokens at first admission; hit_rate counts both), blocks moved to the CPU
   * tiers and evicted from them.
   */
  offload?: { gpu_hit_rate: number; cpu_hit_rate: number; stores: number; evictions: number };
}

const round = (v: number, digits = 3) => (Number.isFinite(v) ? Number(v.toFixed(digits)) : v);

export function summarizeRun(
  run: Pick<FleetRun, 'records' | 'loadSpread' | 'simulatedMs'> & Partial<Pick<FleetRun, 'queues' | 'router' | 'offload'>>,
  wallMs: number,
): PolicySummary {
  const ttft: number[] = [];
  const itl: number[] = [];
  const e2e: number[] = [];
  let prompt = 0;
  let cached = 0;
  let refused = 0;
  let firstArrival = Infinity;
  let lastFinish = 0;
  for (const r of run.records) {
    if (r.refused) {
      refused++;
      continue;
    }
    if (!Number.isFinite(r.finishMs)) continue;
    ttft.push(r.firstTokenMs - r.arrivalMs);
    e2e.push(r.finishMs - r.arrivalMs);
    if (r.outputTokens > 1) itl.push((r.finishMs - r.firstTokenMs) / (r.outputTokens - 1));
    prompt += r.promptTokens;
    cached += r.cachedTokens;
    firstArrival = Math.min(firstArrival, r.arrivalMs);
    lastFinish = Math.max(lastFinish, r.finishMs);
  }
  const byPriority = new Map<number, number[]>();
  for (const r of run.records) {
    if (r.refused || !Number.isFinite(r.finishMs)) continue;
    let list = byPriority.get(r.priority);
    if (!list) byPriority.set(r.priority, (list = []));
    list.push(r.firstTokenMs - r.arrivalMs);
  }
  const t = summarize(ttft);
  const i = summarize(itl);
  const e = summarize(e2e);
  const spanS = (lastFinish - firstArrival) / 1000;
  return {
    requests: run.records.length,
    completed: ttft.length,
    refused,
    ttft_ms: { p50: round(t.p50), p90: round(t.p90), p99: round(t.p99), mean: round(t.mean) },
    itl_ms: { p50: round(i.p50), p90: round(i.p90) },
    e2e_ms: { p50: round(e.p50), p90: round(e.p90) },
    hit_rate: round(prompt ? cached / prompt : 0, 4),
    throughput_rps: round(spanS > 0 ? ttft.length / spanS : 0),
    load_spread: round(run.loadSpread),
    simulated_s: round(run.simulatedMs / 1000),
    wall_s: round(wallMs / 1000),
    ...extras(run, byPriority),
    ...(run.offload ? { offload: offloadSummary(run.offload) } : {}),
  };
}

function offloadSummary(o: NonNullable<FleetRun['offload']>): NonNullable<PolicySummary['offload']> {
  const share = (tokens: number) => round(o.promptTokens ? tokens / o.promptTokens : 0, 4);
  return { gpu_hit_rate: share(o.gpuHitTokens), cpu_hit_rate: share(o.cpuHitTokens), stores: o.stores, evictions: o.evictions };
}

function extras(
  run: Partial<Pick<FleetRun, 'queues' | 'router'>>,
  byPriority: Map<number, number[]>,
): Pick<PolicySummary, 'ttft_p90_ms_by_priority' | 'queue' | 'mode_reasons'> {
  const out: Pick<PolicySummary, 'ttft_p90_ms_by_priority' | 'queue' | 'mode_reasons'> = {};
  if (byPriority.size > 1) {
    out.ttft_p90_ms_by_priority = {};
    for (const [p, values] of [...byPriority].sort(([a], [b]) => a - b)) out.ttft_p90_ms_by_priority[String(p)] = round(summarize(values).p90);
  }
  const queues = Object.values(run.queues ?? {});
  const queued = queues.reduce((n, q) => n + q.queued, 0);
  const rejected: Record<string, number> = {};
  for (const q of queues) for (const [reason, n] of Object.entries(q.rejected)) if (n > 0) rejected[reason] = (rejected[reason] ?? 0) + n;
  if (queued > 0 || Object.keys(rejected).length > 0) out.queue = { queued, rejected };
  const reasons = Object.entries(run.router?.modeReasons ?? {}).filter(([, n]) => n > 0);
  if (reasons.some(([r]) => r !== 'no_prefill_workers' && r !== 'unconditional')) out.mode_reasons = Object.fromEntries(reasons);
  return out;
}
