// SGLang bootstrap handoff (PROTOCOLS.md 3b): the router sends the same body, with bootstrap_host,
// bootstrap_port and bootstrap_room, to a prefill and a decode worker at once. The two legs meet
// by room at the prefill worker's bootstrap address (its side channel): the decode leg waits
// there for the prefill to finish and fails when it does not come within the timeout.
import { OpenAiError, invalidRequest } from '../errors.js';
import type { InferenceRequest } from '../openai.js';
import { pullPrefill } from './side-channel.js';
import { type HandoffContext, type HandoffPlan, holdingPlan } from './types.js';

const MAX_ROOM = (1n << 63n) - 1n;

export const roomKey = (room: bigint) => `room:${room}`;

export async function prepareSglang(ctx: HandoffContext, req: InferenceRequest, engineRequestId: string, signal: AbortSignal): Promise<HandoffPlan> {
  const room = parseRoom(req.body.bootstrap_room);
  if (ctx.role === 'prefill') {
    const key = roomKey(room);
    if (!ctx.holds.open(key, engineRequestId)) {
      throw new OpenAiError(409, `bootstrap_room ${room} is already in use on this prefill worker`, 'invalid_request_error', 'bootstrap_room_in_use');
    }
    // The prefill leg computes the prompt and one token; the decode leg generates the rest.
    return holdingPlan(ctx, key, engineRequestId, { maxTokensCap: 1, handOffWhen: () => true, extras: () => ({}) });
  }
  const host = req.body.bootstrap_host;
  const port = req.body.bootstrap_port;
  if (typeof host !== 'string' || host === '')
    throw invalidRequest("an SGLang decode worker needs bootstrap_host (the prefill worker's bootstrap host)", 'missing_bootstrap');
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw invalidRequest("an SGLang decode worker needs bootstrap_port (the prefill worker's bootstrap port)", 'missing_bootstrap');
  }
  const outcome = await pullPrefill({ host, port, key: roomKey(room), waitMs: ctx.waitMs, signal });
  if (!outcome.ok) {
    throw new OpenAiError(500, `KV transfer for bootstrap_room ${room} failed: ${outcome.reason}`, 'server_error', 'kv_transfer_failed');
  }
  return { kvTransferredTokens: Math.min(outcome.promptTokens, req.promptTokens.length), holdBlocks: false, finish: () => ({}), abandon: () => {} };
}

/** bootstrap_room: an integer in [0, 2^63-1], as a JSON number or a decimal string. */
function parseRoom(v: unknown): bigint {
  let room: bigint | undefined;
  if (typeof v === 'number' && Number.isInteger(v)) room = BigInt(v);
  else if (typeof v === 'string' && /^\d{1,19}$/.test(v)) room = BigInt(v);
  if (room === undefined || room < 0n || room > MAX_ROOM) {
    throw invalidRequest(`an SGLang prefill/decode worker needs bootstrap_room, an integer in [0, 2^63-1], got ${JSON.stringify(v)}`, 'missing_bootstrap');
  }
  return room;
}
