// The OpenAI usage object, in one place. Engines write it (prompt_tokens, completion_tokens,
// total_tokens, prompt_tokens_details.cached_tokens) on a JSON answer or on the last chunk of a
// stream that asked for it (stream_options.include_usage). The router reads it for the request's
// engine hit rate and the token metrics, and in disaggregated serving replaces its
// prompt_tokens_details with the prefill's (the decode worker received the prompt's KV by
// transfer, so its own cache count says nothing). Only the usage chunk is ever re-serialised;
// every other event is relayed byte for byte.
import { SHAPE_USAGE } from './chunk-shape.js';
import { isPlainObject } from './handoff/common.js';
import { jsonEvent, shapeOf } from './sse.js';
import type { SseEvent } from './types.js';
import { withFields } from '../util/objects.js';

/** A usage object as an engine wrote it. */
export type Usage = Record<string, unknown>;
/** usage.prompt_tokens_details: cached_tokens and whatever else the engine reports. */
export type PromptTokensDetails = Record<string, unknown>;

/** A usage object's counts; a missing or malformed count is 0, cachedTokens undefined when absent. */
export interface UsageCounts {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number | undefined;
}

/** The usage object of a JSON answer or a parsed chunk, when it has one. */
export function usageOf(answer: unknown): Usage | undefined {
  const usage = isPlainObject(answer) ? answer.usage : undefined;
  return isPlainObject(usage) ? usage : undefined;
}

/** The usage object of a streamed event, when it carries one (the final usage chunk). */
export function eventUsage(ev: SseEvent): Usage | undefined {
  if ((shapeOf(ev) & SHAPE_USAGE) === 0) return undefined; // most chunks: no parse
  return usageOf(ev.json);
}

export function usageCounts(usage: Usage): UsageCounts {
  const details = usage.prompt_tokens_details;
  const cached = isPlainObject(details) ? details.cached_tokens : undefined;
  return { promptTokens: count(usage.prompt_tokens), completionTokens: count(usage.completion_tokens), cachedTokens: isCount(cached) ? cached : undefined };
}

/** usage.prompt_tokens_details of an answer, when it is an object. */
export function promptTokensDetailsOf(answer: unknown): PromptTokensDetails | undefined {
  const details = usageOf(answer)?.prompt_tokens_details;
  return isPlainObject(details) ? details : undefined;
}

/** A JSON answer with usage.prompt_tokens_details replaced (a copy), or the answer itself when there is nothing to replace. */
export function withPromptTokensDetails(answer: unknown, details: PromptTokensDetails | undefined): unknown {
  const usage = details && usageOf(answer);
  if (!usage) return answer;
  return withFields(answer as Record<string, unknown>, { usage: withFields(usage, { prompt_tokens_details: details }) });
}

/** The event with usage.prompt_tokens_details replaced (re-serialised), or the event itself when it has no usage. */
export function eventWithPromptTokensDetails(ev: SseEvent, details: PromptTokensDetails | undefined): SseEvent {
  if (!details || !eventUsage(ev)) return ev;
  return jsonEvent(withPromptTokensDetails(ev.json, details));
}

/** The usage object an engine writes. */
export function makeUsage(
  promptTokens: number,
  completionTokens: number,
  cachedTokens: number,
): { prompt_tokens: number; total_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } } {
  return {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + completionTokens,
    completion_tokens: completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** Whether a request body asks for the usage chunk (stream_options.include_usage). */
export function wantsUsage(body: Record<string, unknown>): boolean {
  const o = body.stream_options;
  return isPlainObject(o) && o.include_usage === true;
}

/** The body asking for the usage chunk, keeping its other stream_options (a copy of stream_options; the body is changed). */
export function requestUsage(body: Record<string, unknown>): void {
  body.stream_options = withFields(isPlainObject(body.stream_options) ? body.stream_options : {}, { include_usage: true });
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

function count(v: unknown): number {
  return isCount(v) ? v : 0;
}
