// Chooses the handoff of a request by the worker's role and engine kind. Aggregated workers
// ignore handoff fields, like an engine started without a KV connector.
import type { InferenceRequest } from '../openai.js';
import { prepareSglang } from './sglang.js';
import { prepareTrtllm } from './trtllm.js';
import { type HandoffContext, type HandoffPlan, NO_HANDOFF, type PdStyle } from './types.js';
import { prepareVllm } from './vllm.js';

const BY_STYLE = { vllm: prepareVllm, sglang: prepareSglang, trtllm: prepareTrtllm } as const;

export function prepareHandoff(style: PdStyle, ctx: HandoffContext, req: InferenceRequest, engineRequestId: string, signal: AbortSignal): Promise<HandoffPlan> {
  if (ctx.role === 'aggregated') return Promise.resolve(NO_HANDOFF);
  return BY_STYLE[style](ctx, req, engineRequestId, signal);
}
