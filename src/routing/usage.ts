// The prefill leg's usage.prompt_tokens_details (its own prefix-cache hits: the decode worker
// received the prompt's KV by transfer, so its own count says nothing about the cache) replaces
// the decode answer's, as Dynamo carries it in its prefill result. Only the usage chunk is
// re-serialised; every other event is relayed byte for byte.
import { isPlainObject } from '../engines/handoff/common.js';
import { SHAPE_USAGE } from '../engines/chunk-shape.js';
import { jsonEvent, shapeOf } from '../engines/sse.js';
import type { SseEvent } from '../engines/types.js';
import { withFields } from '../util/objects.js';

export type PromptTokensDetails = Record<string, unknown>;

/** The event's usage object, when it carries one (the final usage chunk). */
export function usageOf(ev: SseEvent): Record<string, unknown> | undefined {
  if ((shapeOf(ev) & SHAPE_USAGE) === 0) return undefined; // most chunks: no parse
  const usage = (ev.json as { usage?: unknown } | undefined)?.usage;
  return isPlainObject(usage) ? usage : undefined;
}

/** The event with usage.prompt_tokens_details replaced, or the event itself when it has no usage. */
export function withPromptTokensDetails(ev: SseEvent, details: PromptTokensDetails | undefined): SseEvent {
  if (!details || !usageOf(ev)) return ev;
  const json = ev.json as Record<string, unknown> & { usage: Record<string, unknown> };
  return jsonEvent(withFields(json, { usage: withFields(json.usage, { prompt_tokens_details: details }) }));
}

/** A non-streamed answer with usage.prompt_tokens_details replaced (a copy). */
export function answerWithPromptTokensDetails(answer: unknown, details: PromptTokensDetails | undefined): unknown {
  if (!details || !isPlainObject(answer) || !isPlainObject(answer.usage)) return answer;
  return withFields(answer, { usage: withFields(answer.usage, { prompt_tokens_details: details }) });
}

/** prompt_tokens and cached_tokens of a usage object, for the request's hit rate. */
export function cachedTokensOf(usage: Record<string, unknown>): { prompt: number; cached: number } | undefined {
  const prompt = usage.prompt_tokens;
  const details = usage.prompt_tokens_details;
  const cached = isPlainObject(details) ? details.cached_tokens : undefined;
  return typeof prompt === 'number' && typeof cached === 'number' ? { prompt, cached } : undefined;
}
