// What conditional disaggregation weighs (mode.ts): the prompt's uncached tokens and the prefill
// work queued ahead of it, on the decode worker routing would choose to serve it aggregated and
// on the prefill worker it would choose to prefill it. Queries only: nothing is booked, no
// rotation advances.
import type { KvRouter } from '../kv-router.js';
import type { AdmissionQueue } from '../queue/admission-queue.js';
import type { RequestContext } from './context.js';
import type { ModeEstimate } from './mode.js';

export function estimateModes(ctx: RequestContext, prefillQueue: AdmissionQueue): ModeEstimate {
  const { req } = ctx;
  const local = ctx.decode.query(req.tokens, ctx.aggregatedLeg());
  const remote = ctx.prefill.query(req.tokens, ctx.prefillLeg());
  // Requests waiting in the prefill pool's router queue go ahead too, spread over its workers.
  const waiting = prefillQueue.tokens / Math.max(1, ctx.prefill.pool.selectableCount);
  return {
    localUncached: local.promptTokens - local.cachedTokens,
    localQueued: bookedPrefill(ctx.decode, local.worker, local.dpRank),
    remoteUncached: remote.promptTokens - remote.cachedTokens,
    remoteQueued: bookedPrefill(ctx.prefill, remote.worker, remote.dpRank) + waiting,
  };
}

/** Prefill tokens booked on one worker's rank (0 when the core does not report its load). */
export function bookedPrefill(router: KvRouter, worker: number, dpRank: number): number {
  for (const l of router.core.load?.() ?? []) if (l.worker === worker && l.dpRank === dpRank) return l.prefillTokens;
  return 0;
}
