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
}

const round = (v: number, digits = 3) => (Number.isFinite(v) ? Number(v.toFixed(digits)) : v);

export function summarizeRun(run: Pick<FleetRun, 'records' | 'loadSpread' | 'simulatedMs'>, wallMs: number): PolicySummary {
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
  };
}
