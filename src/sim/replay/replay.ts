// Runs a trace through the virtual fleet once per policy (and optionally a load sweep) and
// assembles the report.
import { basename } from 'node:path';
import type { EngineKind } from '../../engines/types.js';
import type { EngineConfig } from '../engine/index.js';
import { hitRateBound } from './bound.js';
import type { RoutingConfig } from '../../core/routing-core.js';
import type { ReplayPolicy } from './policies.js';
import { summarizeRun, type PolicySummary } from './summary.js';
import type { TraceRequest } from './trace.js';
import { runVirtualFleet, type FleetRun, type VirtualFleetOptions } from './virtual-fleet.js';

export interface ReplayConfig {
  trace: readonly TraceRequest[];
  traceName: string;
  workers: number;
  /** Prefill and decode pools instead of aggregated workers. */
  disaggregated?: { prefill: number; decode: number };
  /** The handoff style of a disaggregated fleet (its workers' engine kind). Default vllm. */
  handoff?: EngineKind;
  policies: readonly ReplayPolicy[];
  /** Routing settings over every policy's (e.g. a kv weight of a sweep). */
  routing?: Partial<RoutingConfig>;
  blockSize: number;
  kvBlocks: number;
  arrivalScale: number;
  seed: number;
  /** Engine settings over the defaults (e.g. offloadBlocks: a CPU tier on every engine). */
  engine?: EngineConfig;
  /** Whether the router indexes the engines' CPU-tier blocks (default true). */
  lowerTiers?: boolean;
  /** Arrival compression factors of the load sweep (none: no sweep). */
  sweepScales?: readonly number[];
  /** The policies the sweep compares (default: all of `policies`). */
  sweepPolicies?: readonly ReplayPolicy[];
  /** The router queue, conditional disaggregation and priorities (VirtualFleetOptions); refusals above a cap are `routing.maxQueuedPrefillTokens`. */
  /** forwardPriority also gives the engines schedulingPolicy 'priority' (without it, they would refuse the priorities). */
  scheduling?: Pick<VirtualFleetOptions, 'routerQueue' | 'conditionalDisagg' | 'highPriorityShare' | 'forwardPriority'>;
  onProgress?: (message: string) => void;
  /** Faults: workers down over spans of virtual time, and passive ejection (VirtualFleetOptions). */
  faults?: Pick<VirtualFleetOptions, 'down' | 'outlierDetection'>;
  /** Sees every fleet run with its per-request records (e.g. to chart TTFT distributions). */
  onRun?: (policy: ReplayPolicy, scale: number, run: FleetRun) => void;
}

export interface SweepPoint {
  scale: number;
  offered_rps: number;
  policies: Record<string, { ttft_p50_ms: number; ttft_p90_ms: number; hit_rate: number; throughput_rps: number; refused: number; saturated: boolean }>;
}

export interface ReplayReport {
  trace: string;
  seed: number;
  workers: number;
  prefill_workers?: number;
  decode_workers?: number;
  /** The prefill -> decode handoff style of a disaggregated fleet. */
  handoff?: EngineKind;
  block_size: number;
  kv_blocks: number;
  /** Blocks of each engine's CPU offload tier (absent: none), and whether the router indexed them. */
  offload_blocks?: number;
  lower_tiers?: boolean;
  arrival_scale: number;
  requests: number;
  offered_rps: number;
  /** Infinite-cache bound in tokens, the unit of `hit_rate` (see bound.ts). */
  hit_rate_bound: number;
  /** The same bound counted in 512-token trace blocks, as the traces README states it. */
  hit_rate_bound_blocks: number;
  wall_s: number;
  simulated_s: number;
  /** Virtual seconds simulated per wall-clock second, over every run of the report. */
  simulated_to_wall: number;
  policies: Record<string, PolicySummary>;
  sweep?: SweepPoint[];
}

/**
 * A policy is saturated at a load when its TTFT p90 grew past this multiple of its p90 at the
 * sweep's lightest load (queues building up), or when it refused requests. Throughput is no
 * criterion: on a finite trace it always trails the offered rate by the final drain.
 */
export const SATURATION_TTFT_GROWTH = 10;

/**
 * Loads of a sweep: geometric steps of 2^(1/3) (three per doubling: x1, x1.26, x1.59, x2, x2.52
 * ...) from start up to max, fine enough to see where each policy's queues start to grow.
 */
export function sweepLoads(start: number, max: number): number[] {
  const out: number[] = [];
  for (let k = 0; ; k++) {
    const s = Number((start * 2 ** (k / 3)).toFixed(2));
    if (s > max * 1.0001) break;
    out.push(s);
  }
  return out;
}

export function offeredRps(trace: readonly TraceRequest[], scale: number): number {
  const spanS = (trace[trace.length - 1].timestamp - trace[0].timestamp) / 1000 / scale;
  return spanS > 0 ? trace.length / spanS : Infinity;
}

export async function runReplay(cfg: ReplayConfig): Promise<ReplayReport> {
  let wallMs = 0;
  let simulatedMs = 0;
  const runOnce = async (policy: ReplayPolicy, scale: number): Promise<PolicySummary> => {
    const started = performance.now();
    const run = await runVirtualFleet(cfg.trace, {
      workers: cfg.workers,
      disaggregated: cfg.disaggregated,
      handoff: cfg.handoff,
      policy,
      routing: cfg.routing,
      lowerTiers: cfg.lowerTiers,
      engine: {
        ...cfg.engine,
        blockSize: cfg.blockSize,
        kvBlocks: cfg.kvBlocks,
        ...(cfg.scheduling?.forwardPriority ? { schedulingPolicy: 'priority' as const } : {}),
      },
      seed: cfg.seed,
      arrivalScale: scale,
      ...cfg.scheduling,
      onProgress: (done, total) => cfg.onProgress?.(`${policy} x${scale}: ${done}/${total} requests`),
      down: cfg.faults?.down,
      outlierDetection: cfg.faults?.outlierDetection,
    });
    const elapsed = performance.now() - started;
    cfg.onRun?.(policy, scale, run);
    wallMs += elapsed;
    simulatedMs += run.simulatedMs;
    return summarizeRun(run, elapsed);
  };

  const policies: Record<string, PolicySummary> = {};
  for (const policy of cfg.policies) policies[policy] = await runOnce(policy, cfg.arrivalScale);

  let sweep: SweepPoint[] | undefined;
  if (cfg.sweepScales?.length) {
    sweep = [];
    const saturated = new Set<string>();
    const baselineP90 = new Map<string, number>();
    const sweepPolicies = cfg.sweepPolicies ?? cfg.policies;
    for (const scale of cfg.sweepScales) {
      const offered = offeredRps(cfg.trace, scale);
      const point: SweepPoint = { scale, offered_rps: round(offered), policies: {} };
      for (const policy of sweepPolicies) {
        const s = scale === cfg.arrivalScale && policies[policy] ? policies[policy] : await runOnce(policy, scale);
        if (!baselineP90.has(policy)) baselineP90.set(policy, s.ttft_ms.p90);
        const isSaturated = s.ttft_ms.p90 > SATURATION_TTFT_GROWTH * baselineP90.get(policy)! || s.refused > 0;
        if (isSaturated) saturated.add(policy);
        point.policies[policy] = {
          ttft_p50_ms: s.ttft_ms.p50,
          ttft_p90_ms: s.ttft_ms.p90,
          hit_rate: s.hit_rate,
          throughput_rps: s.throughput_rps,
          refused: s.refused,
          saturated: isSaturated,
        };
      }
      sweep.push(point);
      if (saturated.size === sweepPolicies.length) break;
    }
  }

  return {
    trace: basename(cfg.traceName),
    seed: cfg.seed,
    workers: cfg.disaggregated ? cfg.disaggregated.prefill + cfg.disaggregated.decode : cfg.workers,
    prefill_workers: cfg.disaggregated?.prefill,
    decode_workers: cfg.disaggregated?.decode,
    handoff: cfg.disaggregated ? (cfg.handoff ?? 'vllm') : undefined,
    block_size: cfg.blockSize,
    kv_blocks: cfg.kvBlocks,
    ...(cfg.engine?.offloadBlocks ? { offload_blocks: cfg.engine.offloadBlocks, lower_tiers: cfg.lowerTiers !== false } : {}),
    arrival_scale: cfg.arrivalScale,
    requests: cfg.trace.length,
    offered_rps: round(offeredRps(cfg.trace, cfg.arrivalScale)),
    hit_rate_bound: round(hitRateBound(cfg.trace, 'tokens'), 4),
    hit_rate_bound_blocks: round(hitRateBound(cfg.trace, 'blocks'), 4),
    wall_s: round(wallMs / 1000),
    simulated_s: round(simulatedMs / 1000),
    simulated_to_wall: round(wallMs > 0 ? simulatedMs / wallMs : 0, 1),
    policies,
    sweep,
  };
}

function round(v: number, digits = 3): number {
  return Number.isFinite(v) ? Number(v.toFixed(digits)) : v;
}
