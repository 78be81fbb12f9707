// The routing headers of a response: the mode it was served in and why, who computed the prompt (the
// prefill worker of a disaggregated request, attributed by attribution.ts) and who decoded it,
// and how many blocks the computing worker already held.
import type { RoutingDecision } from '../../core/routing-core.js';
import { attributePrefillWorker } from '../attribution.js';
import type { RouterRequest } from '../router-request.js';

export function responseHeaders(
  req: RouterRequest,
  mode: 'aggregated' | 'disaggregated' | 'fallback',
  reason: string,
  prefill: RoutingDecision | undefined,
  decode: RoutingDecision | undefined,
  body: unknown,
  prefillDpSize: (worker: number) => number | undefined,
): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': req.requestId, 'x-kvroute-mode': mode, 'x-kvroute-mode-reason': reason };
  if (mode === 'disaggregated') {
    const direct = req.hints.prefillWorkerId === undefined ? undefined : { worker: req.hints.prefillWorkerId, dpRank: req.hints.prefillDpRank };
    const booked = prefill && { worker: prefill.worker, dpRank: prefill.dpRank };
    const who = attributePrefillWorker(booked, direct, body, prefillDpSize);
    if (who) {
      headers['x-kvroute-prefill-worker'] = String(who.worker);
      if (who.dpRank !== undefined) headers['x-kvroute-prefill-dp-rank'] = String(who.dpRank);
    }
  }
  if (decode) {
    headers['x-kvroute-decode-worker'] = String(decode.worker);
    headers['x-kvroute-decode-dp-rank'] = String(decode.dpRank);
  }
  const computing = mode === 'disaggregated' ? prefill : decode;
  if (computing) headers['x-kvroute-overlap-blocks'] = String(computing.overlapBlocks);
  return headers;
}
