// The way into a pool's router queue (../queue): the request's ticket (priority class, priority
// jump, its uncached tokens on the pool, its pin, its client's signal) and the booking to make
// when its turn comes. With the queue off, the booking is made at once and no ticket is built.
import type { KvRouter, LegRoute } from '../kv-router.js';
import type { AdmissionQueue } from '../queue/admission-queue.js';
import type { RequestContext } from './context.js';

/** `start()` now when the queue is off, else once the queue lets the request go (see AdmissionQueue.admit). */
export function admitted<T>(ctx: RequestContext, queue: AdmissionQueue, router: KvRouter, leg: LegRoute, start: () => T): T | Promise<T> {
  if (queue.settings.threshold === null) return start();
  const { req } = ctx;
  const admission = queue.admit({
    requestId: req.requestId,
    priority: req.hints.priority ?? 0,
    priorityJump: req.hints.priorityJump ?? 0,
    uncachedTokens: () => uncachedOn(router, req.tokens, leg),
    pinnedWorker: leg.pinnedWorker,
    signal: req.signal,
    start,
  });
  // Only a request that really waits (its admission is pending) has a queue span.
  if (req.trace === undefined || !(admission instanceof Promise)) return admission;
  const wait = req.trace.queued(queue.name);
  return admission.then(
    (v) => (wait.end(), v),
    (err: unknown) => {
      wait.end(err);
      throw err;
    },
  );
}

/**
 * Prompt tokens no eligible worker of the pool holds: the prompt less the best overlap among the
 * routing candidates (a query: nothing booked, no rotation advanced). The whole prompt when the
 * pool cannot route it now.
 */
export function uncachedOn(router: KvRouter, tokens: Uint32Array, leg: LegRoute): number {
  try {
    const d = router.query(tokens, leg);
    let best = 0;
    for (const c of d.candidates) if (c.overlapBlocks > best) best = c.overlapBlocks;
    return Math.max(0, tokens.length - best * router.core.config.blockSize);
  } catch {
    return tokens.length;
  }
}
