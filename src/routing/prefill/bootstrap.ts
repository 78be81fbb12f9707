// The bootstrap handoff (SGLang; PROTOCOLS.md 3b): both legs carry the prefill worker's bootstrap
// host and port and a room whose residue selects the prefill DP rank. The prefill leg runs in the
// background carrying the request's phase permit, released once it is routed and recorded; the
// decode leg goes out as soon as the prefill leg was written to its engine (at once on a kept-alive
// connection). So a prefill leg whose engine never got it (connection refused) fails over to
// another prefill worker, with that worker's address and a new room, before any decode leg waits at
// the dead one's bootstrap: the pair is routed again, not one leg. A decode leg that fails over
// keeps the address (the prefill waits for its decode). If either leg fails, the other is
// cancelled (a lone decode leg would wait for a bootstrap that never comes). A prefill failure
// found before the decode answer was handed to the client falls back to aggregated serving when
// allowed; after that, the client's stream ends with the prefill's error. A client that leaves
// cancels both legs: SGLang drops an aborted room's transfer on both sides.
import { Cancellation } from '../../util/cancellation.js';
import { withFields } from '../../util/objects.js';
import { bootstrapRoom } from '../../engines/bootstrap-room.js';
import { isAbortError, abortError } from '../../engines/errors.js';
import { sglangHandoff } from '../../engines/handoff/sglang.js';
import type { BootstrapAddress } from '../../engines/handoff/types.js';
import type { SseEvent } from '../../engines/types.js';
import { type PromptTokensDetails, withPromptTokensDetails } from '../../engines/usage.js';
import type { Booking } from '../booking.js';
import type { FreeReason } from '../booking-guard.js';
import type { LegOptions } from '../kv-router.js';
import type { RoutedResponse } from '../router-request.js';
import type { Permit } from '../semaphore.js';
import { prefillFailed } from './aggregated.js';
import type { RequestContext } from './context.js';

type PrefillResult = { ok: true; details: PromptTokensDetails | undefined } | { ok: false };

export async function runBootstrap(ctx: RequestContext, prefill: Booking, permit: Permit): Promise<RoutedResponse> {
  const { req } = ctx;
  // The address of the prefill worker the leg goes out on (made again if a failover moves it).
  let address: BootstrapAddress | undefined;
  const addressOf = (b: Booking): BootstrapAddress => ({
    host: b.worker.bootstrapHost as string,
    port: b.worker.bootstrapPort as number,
    room: sglangHandoff.rooms(req.body, () => bootstrapRoom(b.worker.dpSize, b.decision.dpRank, ctx.env.randomRoom)),
  });
  let markSent!: () => void;
  const prefillSent = new Promise<void>((resolve) => (markSent = resolve));

  // One controller for both legs: the client leaving, or either leg failing, cancels both.
  const legs = new Cancellation();
  const cancelLegs = () => legs.abort(req.signal.reason);
  req.signal.addEventListener('abort', cancelLegs, { once: true });
  let prefillError: unknown;

  const prefillLeg = (async () => {
    ctx.recordRouting('prefill', prefill);
    permit.release();
    return ctx.prefill.json(prefill, req.route, (b) => sglangHandoff.prefillBody(req.body, (address = addressOf(b))), {
      requestId: req.requestId,
      signal: legs.signal,
      enginePriority: ctx.enginePriority,
      trace: req.trace,
      onSent: (b) => {
        ctx.recordRouting('prefill', b);
        markSent();
      },
    });
  })();
  const prefillResult: Promise<PrefillResult> = prefillLeg.then(
    (answer) => ({ ok: true, details: sglangHandoff.promptTokensDetails(answer) }),
    (err: unknown) => {
      if (!legs.signal.aborted) {
        prefillError = err;
        legs.abort();
      }
      markSent(); // nothing to wait for: no decode leg goes out
      return { ok: false };
    },
  );

  let legsOpen = 2;
  const legDone = () => {
    if (--legsOpen === 0) req.signal.removeEventListener('abort', cancelLegs);
  };
  void prefillResult.then(legDone);

  (await ctx.tracker.setPhase('decode')).release(); // waits for the prefill to be routed
  await prefillSent;
  if (legs.signal.aborted) {
    legDone();
    if (req.signal.aborted) throw abortError(req.signal);
    await prefillResult;
    return prefillFailed(ctx, prefillError);
  }
  const decodeBody = sglangHandoff.decodeBody(req.body, address as BootstrapAddress);
  let decode: Booking;
  try {
    const leg = ctx.decodeLeg();
    decode = ctx.decode.book(req.tokens, leg, ctx.bookOptions('decode', leg));
  } catch (err) {
    legs.abort();
    legDone();
    throw err;
  }
  ctx.recordRouting('decode', decode);
  const base = ctx.legOptions('disaggregated', false, legs.signal);
  const opts: LegOptions = withFields(base, {
    onFinish: (reason: FreeReason, err?: unknown) => {
      if (reason !== 'end') legs.abort(); // the decode leg failed or was closed: cancel the prefill
      legDone();
      base.onFinish?.(reason, err);
    },
  });
  const details = async () => {
    const r = await prefillResult;
    return r.ok ? r.details : undefined;
  };
  try {
    if (ctx.stream) {
      const stream = await ctx.decode.stream(decode, req.route, decodeBody, opts);
      return ctx.respond('disaggregated', prefill, decode, { stream: ctx.relay(new PrefillErrorFirst(stream, () => prefillError), details) });
    }
    const answer = await ctx.decode.json(decode, req.route, decodeBody, opts);
    return ctx.answer('disaggregated', prefill, decode, withPromptTokensDetails(answer, await details()));
  } catch (err) {
    legs.abort();
    if (req.signal.aborted) throw abortError(req.signal);
    await prefillResult;
    if (prefillError !== undefined) return prefillFailed(ctx, prefillError);
    throw err;
  }
}

/**
 * The decode stream, except that when it fails because the prefill leg failed (and cancelled it),
 * the consumer sees the prefill's error rather than a cancellation.
 */
class PrefillErrorFirst implements AsyncIterator<SseEvent> {
  constructor(
    private readonly source: AsyncIterator<SseEvent>,
    private readonly prefillError: () => unknown,
  ) {}

  async next(): Promise<IteratorResult<SseEvent>> {
    try {
      return await this.source.next();
    } catch (err) {
      const p = this.prefillError();
      throw p !== undefined && isAbortError(err) ? p : err;
    }
  }

  async return(): Promise<IteratorResult<SseEvent>> {
    await this.source.return?.();
    return { value: undefined, done: true };
  }
}
