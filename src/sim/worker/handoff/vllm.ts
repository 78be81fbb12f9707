// vLLM NIXL handoff (PROTOCOLS.md 3a). Prefill: a request with kv_transfer_params.do_remote_decode
// gets a top-level kv_transfer_params back (null when it ended at prefill, e.g. on EOS) and its
// blocks stay pinned until the decode worker pulls them or the hold times out. Decode: a request
// carrying those params pulls the prompt's KV; when the pull fails it recomputes the prompt, as
// vLLM's default kv load failure policy does.
import { OpenAiError, invalidRequest } from '../errors.js';
import { pullPrefill } from './side-channel.js';
import { type HandoffContext, type HandoffPlan, NO_HANDOFF, holdingPlan } from './types.js';
import type { InferenceRequest } from '../openai.js';

export const vllmKey = (remoteRequestId: string) => `vllm:${remoteRequestId}`;

export async function prepareVllm(ctx: HandoffContext, req: InferenceRequest, engineRequestId: string, signal: AbortSignal): Promise<HandoffPlan> {
  const params = req.body.kv_transfer_params;
  if (params === undefined || params === null) {
    if (ctx.role === 'prefill')
      throw invalidRequest('a vLLM prefill worker needs kv_transfer_params with do_remote_decode: true', 'missing_kv_transfer_params');
    return NO_HANDOFF; // a decode worker serves a plain request by computing the prompt itself
  }
  if (typeof params !== 'object' || Array.isArray(params)) throw invalidRequest('kv_transfer_params must be an object or null', 'invalid_kv_transfer_params');
  const p = params as Record<string, unknown>;
  if (ctx.role === 'prefill') {
    if (p.do_remote_decode !== true)
      throw invalidRequest('a vLLM prefill worker needs kv_transfer_params.do_remote_decode: true', 'invalid_kv_transfer_params');
    const side = ctx.sideChannel as { host: string; port: number };
    const key = vllmKey(engineRequestId);
    if (!ctx.holds.open(key, engineRequestId))
      throw new OpenAiError(409, `request ${engineRequestId} is already held`, 'invalid_request_error', 'duplicate_request_id');
    return holdingPlan(ctx, key, engineRequestId, {
      handOffWhen: (r) => r.finishReason === 'length',
      extras: (_r, blockIds) => ({
        top: {
          kv_transfer_params: blockIds && {
            do_remote_prefill: true,
            do_remote_decode: false,
            remote_block_ids: blockIds,
            remote_engine_id: ctx.engineId,
            remote_request_id: engineRequestId,
            remote_host: side.host,
            remote_port: side.port,
            tp_size: 1,
          },
        },
      }),
    });
  }
  if (p.do_remote_prefill !== true) return NO_HANDOFF;
  const host = p.remote_host;
  const port = p.remote_port;
  const remoteRequestId = p.remote_request_id;
  const remoteEngineId = p.remote_engine_id;
  if (typeof host !== 'string' || host === '') throw invalidRequest('kv_transfer_params.remote_host must be a non-empty string', 'invalid_kv_transfer_params');
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
    throw invalidRequest('kv_transfer_params.remote_port must be a port number', 'invalid_kv_transfer_params');
  if (typeof remoteRequestId !== 'string' || remoteRequestId === '')
    throw invalidRequest('kv_transfer_params.remote_request_id must be a non-empty string', 'invalid_kv_transfer_params');
  if (remoteEngineId !== undefined && remoteEngineId !== null && typeof remoteEngineId !== 'string') {
    throw invalidRequest('kv_transfer_params.remote_engine_id must be a string', 'invalid_kv_transfer_params');
  }
  if (p.remote_block_ids !== undefined && p.remote_block_ids !== null && !Array.isArray(p.remote_block_ids)) {
    throw invalidRequest('kv_transfer_params.remote_block_ids must be an array', 'invalid_kv_transfer_params');
  }
  const outcome = await pullPrefill({ host, port, key: vllmKey(remoteRequestId), engineId: remoteEngineId ?? undefined, waitMs: 0, signal });
  if (!outcome.ok) {
    if (!signal.aborted) ctx.onRecompute();
    return NO_HANDOFF;
  }
  return { ...NO_HANDOFF, kvTransferredTokens: Math.min(outcome.promptTokens, req.promptTokens.length) };
}
