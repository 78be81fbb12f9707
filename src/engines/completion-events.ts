// A finished, non-streamed answer retold as the SSE chunks a streaming client expects: used when
// the prefill leg already completed the request (EOS) but the client asked for a stream. One chunk
// carries the whole choice, then the usage chunk when the client asked for it, then [DONE].
import { isPlainObject } from './handoff/common.js';
import { DONE_EVENT, jsonEvent } from './sse.js';
import { usageOf } from './usage.js';
import type { OpenAiRoute, SseEvent } from './types.js';
import { withFields } from '../util/objects.js';

export function completionAsEvents(route: OpenAiRoute, answer: Record<string, unknown>, includeUsage: boolean): SseEvent[] {
  const chat = route === '/v1/chat/completions';
  const head = { id: answer.id, object: chat ? 'chat.completion.chunk' : 'text_completion', created: answer.created, model: answer.model };
  const choices = Array.isArray(answer.choices) ? answer.choices.filter(isPlainObject) : [];
  const events: SseEvent[] = [jsonEvent(withFields(head, { choices: choices.map((c) => (chat ? chatDelta(c) : completionChoice(c))) }))];
  const usage = includeUsage ? usageOf(answer) : undefined;
  if (usage) events.push(jsonEvent(withFields(head, { choices: [], usage })));
  events.push(DONE_EVENT);
  return events;
}

function completionChoice(c: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { index: c.index ?? 0, text: c.text ?? '', logprobs: c.logprobs ?? null, finish_reason: c.finish_reason ?? null };
  if ('stop_reason' in c) out.stop_reason = c.stop_reason;
  if ('token_ids' in c) out.token_ids = c.token_ids;
  return out;
}

function chatDelta(c: Record<string, unknown>): Record<string, unknown> {
  const message = isPlainObject(c.message) ? c.message : {};
  const delta: Record<string, unknown> = { role: message.role ?? 'assistant', content: message.content ?? '' };
  if (message.tool_calls !== undefined) delta.tool_calls = message.tool_calls;
  if (message.reasoning_content !== undefined) delta.reasoning_content = message.reasoning_content;
  return { index: c.index ?? 0, delta, logprobs: c.logprobs ?? null, finish_reason: c.finish_reason ?? null };
}
