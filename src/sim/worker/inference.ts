// One /v1/completions or /v1/chat/completions request through a simulated worker: fault check,
// validation, the prefill/decode handoff of the worker's engine kind, the engine request, and the
// reply (one JSON body, or an SSE stream exactly as PROTOCOLS.md section 5). A client that leaves
// aborts the engine request; an engine restart drops the connection like a crashed server would.
import { randomUUID } from 'node:crypto';
import { OpenAiError } from './errors.js';
import type { HandoffContext, HandoffPlan, PdStyle, ResponseExtras } from './handoff/types.js';
import { prepareHandoff } from './handoff/index.js';
import type { HttpExchange } from './http-server.js';
import {
  type Endpoint,
  type FinishReason,
  type ParseOptions,
  type ResponseHeader,
  chatRoleChunk,
  fullResponse,
  parseInferenceRequest,
  parseJsonBody,
  responseId,
  textChunk,
  type Usage,
  usageChunk,
} from './openai.js';
import { makeUsage } from '../../engines/usage.js';
import { GeneratedText } from './token-text.js';
import type { SimRequest, TokenOutput } from '../engine/index.js';
import type { FaultState } from './faults.js';
import { lowerFirstPriority } from '../../engines/priority.js';

/** The engine request the worker submits, and one generated token as the engine reports it. */
export type EngineRequest = SimRequest;
export type EngineToken = TokenOutput;

export interface EngineHandle {
  submit(req: EngineRequest, sink: { onToken(out: EngineToken): void; onError(err: Error): void }): void;
  abort(id: string): boolean;
}

export interface InferenceRuntime {
  engine: EngineHandle;
  faults: FaultState;
  pdStyle: PdStyle;
  handoff: HandoffContext;
  parseOptions: ParseOptions;
  /** The name served when a request names no model. */
  modelName: string;
  /** Model names that select a LoRA adapter (events and cache keys carry the name). */
  loras: ReadonlySet<string>;
  newEngineRequestId(externalId: string): string;
  clock: () => number;
}

export async function serveInference(rt: InferenceRuntime, ex: HttpExchange, endpoint: Endpoint): Promise<void> {
  if (rt.faults.takeFailure()) {
    throw new OpenAiError(500, 'injected failure (fault switch fail_next)', 'server_error', 'injected_fault');
  }
  const req = parseInferenceRequest(endpoint, parseJsonBody(ex.body), rt.parseOptions);
  const externalId = ex.request.headers['x-request-id'] || randomUUID();
  const engineRequestId = rt.newEngineRequestId(externalId);
  const idHeader = { 'x-request-id': externalId };

  const cancel = new AbortController();
  ex.onAbort(() => cancel.abort());
  const plan = await prepareHandoff(rt.pdStyle, rt.handoff, req, engineRequestId, cancel.signal);
  if (ex.finished) {
    plan.abandon('the client disconnected');
    return;
  }

  const model = req.model ?? rt.modelName;
  const h: ResponseHeader = { endpoint, id: responseId(endpoint, externalId), created: Math.floor(rt.clock() / 1000), model };
  const text = new GeneratedText();
  const tokenIds: number[] = [];
  let fullText = '';

  const finish = (out: EngineToken, finishReason: FinishReason): { extras: ResponseExtras; u: Usage } => {
    const extras = plan.finish({ finishReason, promptTokens: out.promptTokens, tokenIds });
    return { extras, u: makeUsage(out.promptTokens, tokenIds.length, out.cachedTokens) };
  };

  const sink = {
    // finish_reason "abort" (the engine gave up on the request) ends the reply like any other, as in vLLM.
    onToken(out: EngineToken) {
      tokenIds.push(out.tokenId);
      let piece = text.push(out.tokenId);
      if (out.finishReason) piece += text.end();
      if (req.stream) {
        if (!out.finishReason) {
          ex.sse(JSON.stringify(textChunk(h, piece, null)));
          return;
        }
        const { extras, u } = finish(out, out.finishReason);
        ex.sse(JSON.stringify(textChunk(h, piece, out.finishReason, extras.choice)));
        if (req.includeUsage) ex.sse(JSON.stringify(usageChunk(h, u)));
        ex.sse('[DONE]');
        ex.endStream();
        return;
      }
      fullText += piece;
      if (out.finishReason) {
        const { extras, u } = finish(out, out.finishReason);
        ex.json(200, fullResponse(h, fullText, out.finishReason, u, extras), idHeader);
      }
    },
    onError(err: Error) {
      plan.abandon(err.message);
      ex.kill();
    },
  };

  const engineRequest: EngineRequest = {
    id: engineRequestId,
    promptTokens: req.promptTokens,
    maxTokens: plan.maxTokensCap !== undefined ? Math.min(req.maxTokens, plan.maxTokensCap) : req.maxTokens,
    kvTransferredTokens: plan.kvTransferredTokens,
    holdBlocksAfterFinish: plan.holdBlocks,
    ignoreEos: req.ignoreEos,
  };
  // Scheduled by it when the engine's policy is priority (vLLM refuses a non-zero one under fcfs,
  // and so does the simulated engine: a 400).
  if (req.priority !== 0) engineRequest.priority = lowerFirstPriority(rt.pdStyle, req.priority);
  if (req.model !== undefined && rt.loras.has(req.model)) engineRequest.loraName = req.model;
  submitOrAbandon(rt, engineRequest, sink, plan);
  ex.onAbort(() => {
    if (rt.engine.abort(engineRequestId)) plan.abandon('the client disconnected');
  });
  if (req.stream) {
    ex.startStream(idHeader);
    if (endpoint === 'chat') ex.sse(JSON.stringify(chatRoleChunk(h)));
  }
}

function submitOrAbandon(rt: InferenceRuntime, r: EngineRequest, sink: Parameters<EngineHandle['submit']>[1], plan: HandoffPlan): void {
  try {
    rt.engine.submit(r, sink);
  } catch (err) {
    plan.abandon('the engine refused the request');
    throw err;
  }
}
