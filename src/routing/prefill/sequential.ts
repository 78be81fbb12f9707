// The sequential handoff (vLLM NIXL, TensorRT-LLM; PROTOCOLS.md 3a and 3c): a one-token prefill
// leg, then the decode leg carrying the transfer state the prefill returned. A prefill that already
// finished the request (EOS) is the answer (retold as a stream if asked). The decode leg is
// routed only after the prefill, with overlap credit 0, on the load of that moment.
//
// Client disconnect (PROTOCOLS.md 3a point 4): while the prefill leg runs, leaving aborts it (the
// engine drops the request and frees its blocks). Once the prefill has answered, its worker holds
// the prompt's KV blocks until a decode worker pulls them, and HTTP gives no way to release them.
// So the decode leg always starts and is not closed before its first event (proof the KV was
// pulled) or the release timeout; a client that left before the decode was sent gets a one-token,
// non-streamed decode instead. The client's request ends at once either way; the leg finishes in
// the background, its booking freed when it is really closed (KvRouter.idle() waits for these).
import { completionAsEvents } from '../../engines/completion-events.js';
import { oneTokenPrefill } from '../../engines/handoff/common.js';
import { handoffFor } from '../../engines/handoff/index.js';
import type { PrefillOutcome, SequentialHandoff } from '../../engines/handoff/types.js';
import { abortError } from '../../engines/errors.js';
import type { SseEvent } from '../../engines/types.js';
import { withPromptTokensDetails, usageOf, wantsUsage } from '../../engines/usage.js';
import type { Booking } from '../booking.js';
import type { RoutedResponse } from '../router-request.js';
import type { Permit } from '../semaphore.js';
import { prefillFailed } from './aggregated.js';
import type { RequestContext } from './context.js';

export async function runSequential(ctx: RequestContext, prefill: Booking, permit: Permit): Promise<RoutedResponse> {
  const { req } = ctx;
  const adapter = handoffFor(prefill.worker.kind) as SequentialHandoff;
  ctx.recordRouting('prefill', prefill);
  permit.release();

  let outcome: PrefillOutcome;
  try {
    const answer = await ctx.prefill.json(prefill, req.route, adapter.prefillBody(req.body), {
      requestId: req.requestId,
      signal: req.signal,
      enginePriority: ctx.enginePriority,
      trace: req.trace,
      onSent: (b) => ctx.recordRouting('prefill', b),
    });
    outcome = adapter.interpretPrefill(answer, prefill.worker.baseUrl);
  } catch (err) {
    if (req.signal.aborted) throw abortError(req.signal);
    return prefillFailed(ctx, err);
  }
  if (outcome.kind === 'finished') return finishedAtPrefill(ctx, prefill, outcome.response);

  // From here on the decode leg must run, whatever the client does (see the header comment).
  (await ctx.tracker.setPhase('decode')).release();
  const leg = ctx.decodeLeg();
  const decode = ctx.decode.book(req.tokens, leg, ctx.bookOptions('decode', leg));
  ctx.recordRouting('decode', decode);
  const details = outcome.promptTokensDetails;
  const clientGone = req.signal.aborted;
  const body = clientGone ? oneTokenPrefill(adapter.decodeBody(req.body, outcome)) : adapter.decodeBody(req.body, outcome);
  const opts = ctx.legOptions('disaggregated', true);
  if (ctx.stream && !clientGone) {
    const stream = await ctx.decode.stream(decode, req.route, body, opts);
    return ctx.respond('disaggregated', prefill, decode, { stream: ctx.relay(stream, () => details) });
  }
  return ctx.answer('disaggregated', prefill, decode, withPromptTokensDetails(await ctx.decode.json(decode, req.route, body, opts), details));
}

/** Prefill completed the request (EOS): its answer goes to the client, retold as a stream if asked. */
function finishedAtPrefill(ctx: RequestContext, prefill: Booking, answer: Record<string, unknown>): RoutedResponse {
  ctx.env.report.finishedAtPrefill();
  ctx.tracker.recordTokens(1);
  ctx.recordUsage(usageOf(answer));
  ctx.done('disaggregated', 'end');
  const payload = ctx.stream ? { stream: eventsOf(completionAsEvents(ctx.req.route, answer, wantsUsage(ctx.req.body))) } : { body: answer };
  return ctx.respond('disaggregated', prefill, undefined, payload);
}

/** A fixed list of events as a pull-based stream. */
function eventsOf(events: SseEvent[]): AsyncIterable<SseEvent> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        next: async () => (i < events.length ? { value: events[i++], done: false } : { value: undefined, done: true }),
        return: async () => {
          i = events.length;
          return { value: undefined, done: true };
        },
      };
    },
  };
}
