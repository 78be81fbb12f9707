// TensorRT-LLM handoff (PROTOCOLS.md 3c): a context_only request returns, in
// choices[0].disaggregated_params, the first token, a context request id and an opaque state
// (base64); the generation_only request hands them back to a generation worker, which pulls the
// KV from the context worker the state names.
import { OpenAiError, invalidRequest } from '../errors.js';
import type { InferenceRequest } from '../openai.js';
import { pullPrefill } from './side-channel.js';
import { type HandoffContext, type HandoffPlan, NO_HANDOFF, holdingPlan } from './types.js';

interface OpaqueState {
  host: string;
  port: number;
  engine_id: string;
  key: string;
}

export async function prepareTrtllm(ctx: HandoffContext, req: InferenceRequest, engineRequestId: string, signal: AbortSignal): Promise<HandoffPlan> {
  const dp = req.body.disaggregated_params;
  if (dp === undefined || dp === null) {
    if (ctx.role === 'prefill') {
      throw invalidRequest('a TensorRT-LLM context worker needs disaggregated_params {"request_type":"context_only"}', 'missing_disaggregated_params');
    }
    return NO_HANDOFF; // a generation worker serves a plain request by computing the prompt itself
  }
  if (typeof dp !== 'object' || Array.isArray(dp)) throw invalidRequest('disaggregated_params must be an object', 'invalid_disaggregated_params');
  const params = dp as Record<string, unknown>;
  const wanted = ctx.role === 'prefill' ? 'context_only' : 'generation_only';
  if (params.request_type !== wanted) {
    throw invalidRequest(
      `a TensorRT-LLM ${ctx.role} worker needs disaggregated_params.request_type "${wanted}", got ${JSON.stringify(params.request_type)}`,
      'invalid_disaggregated_params',
    );
  }
  if (ctx.role === 'prefill') {
    const side = ctx.sideChannel as { host: string; port: number };
    const ctxRequestId = ctx.nextContextId();
    const key = `ctx:${ctxRequestId}`;
    ctx.holds.open(key, engineRequestId);
    const state: OpaqueState = { host: side.host, port: side.port, engine_id: ctx.engineId, key };
    return holdingPlan(ctx, key, engineRequestId, {
      maxTokensCap: 1,
      handOffWhen: (r) => r.finishReason === 'length',
      extras: (r) => ({
        choice: {
          disaggregated_params: {
            request_type: 'context_only',
            first_gen_tokens: r.tokenIds.slice(0, 1),
            ctx_request_id: ctxRequestId,
            encoded_opaque_state: Buffer.from(JSON.stringify(state)).toString('base64'),
            draft_tokens: null,
          },
        },
      }),
    });
  }
  const state = decodeState(params.encoded_opaque_state);
  if (params.ctx_request_id !== undefined && params.ctx_request_id !== null && `ctx:${String(params.ctx_request_id)}` !== state.key) {
    throw invalidRequest('disaggregated_params.ctx_request_id does not match encoded_opaque_state', 'invalid_disaggregated_params');
  }
  const outcome = await pullPrefill({ host: state.host, port: state.port, key: state.key, engineId: state.engine_id, waitMs: 0, signal });
  if (!outcome.ok) {
    throw new OpenAiError(500, `KV transfer from the context worker failed: ${outcome.reason}`, 'server_error', 'kv_transfer_failed');
  }
  return { ...NO_HANDOFF, kvTransferredTokens: Math.min(outcome.promptTokens, req.promptTokens.length) };
}

function decodeState(v: unknown): OpaqueState {
  const bad = () => invalidRequest('disaggregated_params.encoded_opaque_state is missing or was not produced by a context worker', 'invalid_opaque_state');
  if (typeof v !== 'string' || v === '') throw bad();
  let s: Partial<OpaqueState>;
  try {
    s = JSON.parse(Buffer.from(v, 'base64').toString('utf8')) as Partial<OpaqueState>;
  } catch {
    throw bad();
  }
  if (typeof s?.host !== 'string' || typeof s.port !== 'number' || typeof s.key !== 'string' || typeof s.engine_id !== 'string') throw bad();
  return s as OpaqueState;
}
