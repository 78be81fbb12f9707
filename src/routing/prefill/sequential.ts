// The sequential handoff (vLLM NIXL, TensorRT-LLM; PROTOCOLS.md 3a and 3c): a one-token prefill
// leg, then the decode leg carrying the transfer state the prefill returned. A prefill that already
// finished the request (EOS) is the answer. The decode leg is routed only after the prefill, with
// overlap credit 0, on the load of that moment.
//
// Client disconnect (PROTOCOLS.md 3a point 4): while the prefill leg runs, leaving aborts it (the
// engine drops the request and frees its blocks). Once the prefill has answered, its worker holds
// the prompt's KV blocks until a decode worker pulls them, and HTTP gives no way to release them.
// So the decode leg always starts and is not closed before its first event (proof the KV was
// pulled) or the release timeout; a client that left before the decode was sent gets a one-token,
// non-streamed decode instead. The client's request ends at once either way; the leg finishes in
// the background, its booking freed when it is really closed (KvRouter.idle() waits for these).
import { oneTokenPrefill } from '../../engines/handoff/common.js';
import { handoffFor } from '../../engines/handoff/index.js';
import type { PrefillOutcome, SequentialHandoff } from '../../engines/handoff/types.js';
import { abortError } from '../../engines/errors.js';
import type { Booking } from '../kv-router.js';
import type { PrefillRouter, RequestContext } from '../prefill-router.js';
import type { RoutedResponse } from '../router-request.js';
import type { Permit } from '../semaphore.js';
import { answerWithPromptTokensDetails } from '../usage.js';

export async function runSequential(router: PrefillRouter, ctx: RequestContext, prefill: Booking, permit: Permit): Promise<RoutedResponse> {
  const { req } = ctx;
  const adapter = handoffFor(prefill.worker.kind) as SequentialHandoff;
  router.recordRouting(ctx, 'prefill', prefill);
  permit.release();

  let outcome: PrefillOutcome;
  try {
    const answer = await router.prefill.json(prefill, req.route, adapter.prefillBody(req.body), { requestId: req.requestId, signal: req.signal });
    outcome = adapter.interpretPrefill(answer, prefill.worker.baseUrl);
  } catch (err) {
    if (req.signal.aborted) throw abortError(req.signal);
    return router.prefillFailed(ctx, err);
  }
  if (outcome.kind === 'finished') return router.finishedAtPrefill(ctx, prefill, outcome.response);

  // From here on the decode leg must run, whatever the client does (see the header comment).
  (await ctx.tracker.setPhase('decode')).release();
  const decode = router.decode.book(req.tokens, router.decodeLeg(ctx));
  router.recordRouting(ctx, 'decode', decode);
  const details = outcome.promptTokensDetails;
  const clientGone = req.signal.aborted;
  const body = clientGone ? oneTokenPrefill(adapter.decodeBody(req.body, outcome)) : adapter.decodeBody(req.body, outcome);
  const opts = router.legOptions(ctx, 'disaggregated', true);
  if (ctx.stream && !clientGone) {
    const stream = await router.decode.stream(decode, req.route, body, opts);
    return router.respond(ctx, 'disaggregated', prefill, decode, { stream: router.relay(ctx, stream, () => details) });
  }
  const answer = answerWithPromptTokensDetails(await router.decode.json(decode, req.route, body, opts), details);
  const usage = (answer as { usage?: unknown } | null)?.usage;
  if (usage && typeof usage === 'object') router.recordUsage(ctx, usage as Record<string, unknown>);
  return router.respond(ctx, 'disaggregated', prefill, decode, { body: answer });
}
