// The prefill/decode handoff of one request, whatever the engine kind: what the engine request
// needs (KV arriving by transfer, blocks to hold, a token cap) and what the response carries.
import type { InferenceRequest } from '../openai.js';
import type { KvHolds } from './kv-holds.js';
import type { EngineKind, WorkerRole } from '../../../core/vocabulary.js';

export type { WorkerRole };
/** The engine whose prefill/decode handoff a simulated worker speaks. */
export type PdStyle = EngineKind;

export interface HandoffContext {
  role: WorkerRole;
  engineId: string;
  /** Where decode workers pull this (prefill) worker's KV: its side channel. */
  sideChannel?: { host: string; port: number };
  holds: KvHolds;
  /** How long a decode leg waits for a prefill that has not finished yet (SGLang). */
  waitMs: number;
  blockSize: number;
  /** Block ids to advertise for a held prefill (the engine's physical ids are not modelled). */
  allocateBlockIds(count: number): number[];
  /** A new TensorRT-LLM context request id. */
  nextContextId(): number;
  /** Counts a failed KV pull that fell back to computing the prompt locally (vLLM). */
  onRecompute(): void;
}

export interface FinishedRequest {
  finishReason: 'length' | 'stop' | 'abort';
  promptTokens: number;
  tokenIds: readonly number[];
}

export interface ResponseExtras {
  /** Top-level response fields (vLLM kv_transfer_params). */
  top?: Record<string, unknown>;
  /** Fields of choices[0] (TensorRT-LLM disaggregated_params). */
  choice?: Record<string, unknown>;
}

export interface HandoffPlan {
  /** Prompt tokens whose KV arrives by transfer (decode side). */
  kvTransferredTokens: number;
  /** Keep the request's blocks pinned after it finishes (prefill side). */
  holdBlocks: boolean;
  /** A prefill leg generates at most this many tokens whatever max_tokens says. */
  maxTokensCap?: number;
  /** The engine request finished: hand off (or not) and say what the response carries. */
  finish(r: FinishedRequest): ResponseExtras;
  /** The request failed or the client left before it finished: nothing will be pulled. */
  abandon(reason: string): void;
}

export const NO_HANDOFF: HandoffPlan = {
  kvTransferredTokens: 0,
  holdBlocks: false,
  finish: () => ({}),
  abandon: () => {},
};

export type PrepareHandoff = (ctx: HandoffContext, req: InferenceRequest, engineRequestId: string, signal: AbortSignal) => Promise<HandoffPlan>;

/** A prefill leg that holds its blocks under `key` until pulled; `extras` shapes the response. */
export function holdingPlan(
  ctx: HandoffContext,
  key: string,
  engineRequestId: string,
  opts: { maxTokensCap?: number; handOffWhen: (r: FinishedRequest) => boolean; extras: (r: FinishedRequest, blockIds: number[] | null) => ResponseExtras },
): HandoffPlan {
  return {
    kvTransferredTokens: 0,
    holdBlocks: true,
    maxTokensCap: opts.maxTokensCap,
    finish(r) {
      if (r.finishReason === 'abort' || !opts.handOffWhen(r)) {
        ctx.holds.fail(key, r.finishReason === 'abort' ? 'the prefill was aborted' : 'the request finished at prefill');
        return opts.extras(r, null);
      }
      const blockIds = ctx.allocateBlockIds(Math.ceil(r.promptTokens / ctx.blockSize));
      ctx.holds.ready(key, { engineRequestId, promptTokens: r.promptTokens, blockIds });
      return opts.extras(r, blockIds);
    },
    abandon(reason) {
      ctx.holds.fail(key, reason);
    },
  };
}
