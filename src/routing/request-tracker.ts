// Per-request bookkeeping across its phases (prefill, decode, or aggregated): which worker served
// each phase, time to first token, inter-token latency and the request's KV hit rate. setPhase
// takes the tracker's one permit, so a phase starts only after the previous one was recorded: the
// bootstrap path hands the prefill's permit to its background task, which releases it once the
// prefill worker is routed and recorded, and only then can the decode phase begin.
import type { SignalLike } from '../util/cancellation.js';
import { type Permit, Semaphore } from './semaphore.js';
import type { WorkerRole } from '../core/vocabulary.js';

/** A request's phase is named by the role of the worker that serves it. */
export type Phase = WorkerRole;

export interface PhaseRouting {
  worker: number;
  dpRank: number;
  overlapBlocks: number;
  promptTokens: number;
  /** Prompt tokens the router expects the worker to hold (overlap x block size). */
  cachedTokens: number;
}

export interface TrackerSummary {
  requestId: string;
  phases: Phase[];
  workers: Partial<Record<Phase, { worker: number; dpRank: number }>>;
  ttftMs?: number;
  /** Mean and max gap between consecutive tokens after the first. */
  itlMs?: { mean: number; max: number; samples: number };
  outputTokens: number;
  /** Router-predicted hit rate of the phase that computed the prompt (cached / prompt tokens). */
  kvHitRate?: number;
  /** The engine's own prefix-cache hit rate, from usage.prompt_tokens_details.cached_tokens. */
  engineKvHitRate?: number;
}

// Read once: the getter validates its receiver on every call, and this clock runs per token.
const TIME_ORIGIN = performance.timeOrigin;
export const defaultClock = (): number => TIME_ORIGIN + performance.now();

export class RequestTracker {
  private readonly permit = new Semaphore(1);
  private readonly routings = new Map<Phase, PhaseRouting>();
  private readonly order: Phase[] = [];
  private current: Phase | undefined;
  private firstTokenAt: number | undefined;
  private lastTokenAt: number | undefined;
  private tokens = 0;
  private itlSum = 0;
  private itlMax = 0;
  private itlSamples = 0;
  private engineCached: { cached: number; prompt: number } | undefined;

  constructor(
    readonly requestId: string,
    private readonly clock: () => number = defaultClock,
    readonly startedAt: number = clock(),
  ) {}

  get phase(): Phase | undefined {
    return this.current;
  }

  /**
   * Enters `phase` once the one permit is free. The caller (or the task it hands the permit to)
   * releases it after recording the phase's worker.
   */
  async setPhase(phase: Phase, signal?: SignalLike): Promise<Permit> {
    const p = await this.permit.acquire(signal);
    this.current = phase;
    this.order.push(phase);
    return p;
  }

  /** Records where `phase` was routed (a fallback may re-record a phase: the last one counts). */
  recordRouting(phase: Phase, routing: PhaseRouting): void {
    this.routings.set(phase, { ...routing });
  }

  routingOf(phase: Phase): PhaseRouting | undefined {
    return this.routings.get(phase);
  }

  /** Records `count` generated tokens arriving now (one SSE chunk may carry several). */
  recordTokens(count = 1): void {
    if (count <= 0) return;
    const now = this.clock();
    if (this.firstTokenAt === undefined) {
      this.firstTokenAt = now;
    } else if (this.lastTokenAt !== undefined) {
      const gap = now - this.lastTokenAt;
      this.itlSum += gap;
      this.itlSamples++;
      if (gap > this.itlMax) this.itlMax = gap;
    }
    this.lastTokenAt = now;
    this.tokens += count;
  }

  /** The engine's usage: its own count of cached prompt tokens. */
  recordUsage(promptTokens: number, cachedTokens: number): void {
    if (Number.isFinite(promptTokens) && promptTokens > 0 && Number.isFinite(cachedTokens) && cachedTokens >= 0) {
      this.engineCached = { cached: cachedTokens, prompt: promptTokens };
    }
  }

  summary(): TrackerSummary {
    const workers: TrackerSummary['workers'] = {};
    for (const [phase, r] of this.routings) workers[phase] = { worker: r.worker, dpRank: r.dpRank };
    const computing = this.routings.get('prefill') ?? this.routings.get('aggregated');
    return {
      requestId: this.requestId,
      phases: [...this.order],
      workers,
      ttftMs: this.firstTokenAt === undefined ? undefined : this.firstTokenAt - this.startedAt,
      itlMs: this.itlSamples === 0 ? undefined : { mean: this.itlSum / this.itlSamples, max: this.itlMax, samples: this.itlSamples },
      outputTokens: this.tokens,
      kvHitRate: computing && computing.promptTokens > 0 ? computing.cachedTokens / computing.promptTokens : undefined,
      engineKvHitRate: this.engineCached ? Math.min(1, this.engineCached.cached / this.engineCached.prompt) : undefined,
    };
  }
}

export type { Permit };
