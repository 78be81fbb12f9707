// Aggregated serving: one leg to a decode-pool worker, which computes the prompt and decodes; the
// client's body goes as it came. Used when the request's mode is aggregated, and as the fallback
// of a disaggregated request whose prefill failed for a reason that is not the request's own.
import { EngineError, abortError } from '../../engines/errors.js';
import type { Booking } from '../booking.js';
import type { RoutedResponse } from '../router-request.js';
import { admitted } from './admission.js';
import type { RequestContext } from './context.js';

/**
 * Serves the request on a decode-pool worker. An aggregated request waits its turn in the decode
 * pool's router queue; a fallback was already let through by the prefill pool's and goes at once.
 */
export async function serveAggregated(ctx: RequestContext, mode: 'aggregated' | 'fallback'): Promise<RoutedResponse> {
  const { req, decode } = ctx;
  const permit = await ctx.tracker.setPhase('aggregated', req.signal);
  let booking: Booking;
  try {
    const leg = ctx.aggregatedLeg();
    const book = () => decode.book(req.tokens, leg, ctx.bookOptions('decode', leg));
    booking = mode === 'aggregated' ? await admitted(ctx, ctx.env.queues.decode, decode, leg, book) : book();
    ctx.recordRouting('aggregated', booking);
  } finally {
    permit.release();
  }
  if (mode === 'aggregated') ctx.env.report.aggregated();
  if (ctx.stream) {
    // Nothing to inject into the usage chunk: the leg's stream goes out as it is (its events are
    // seen by onEvent, usage included), without a mapped stream's layer of promises per pull.
    const stream = await decode.stream(booking, req.route, req.body, ctx.legOptions(mode, false, undefined, true));
    return ctx.respond(mode, undefined, booking, { stream });
  }
  return ctx.answer(mode, undefined, booking, await decode.json(booking, req.route, req.body, ctx.legOptions(mode, false)));
}

/** A failed prefill leg: aggregated serving when allowed and the failure is not the request's fault. */
export async function prefillFailed(ctx: RequestContext, err: unknown): Promise<RoutedResponse> {
  if (ctx.req.signal.aborted) throw abortError(ctx.req.signal);
  if (!ctx.env.fallbackToAggregated || isClientFault(err)) throw err;
  ctx.env.report.fallback(ctx.req.requestId, err);
  ctx.modeReason = 'prefill_failed';
  ctx.req.trace?.mode('fallback', 'prefill_failed');
  return serveAggregated(ctx, 'fallback');
}

/** An engine's own 4xx verdict on the request would repeat on any worker: no fallback for it. */
function isClientFault(err: unknown): boolean {
  return err instanceof EngineError && err.failure === 'engine_rejected' && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}
