// A chat request served through the engine's /v1/completions (token-id prompt) gets its answer
// converted back to the chat format: text_completion -> chat.completion, and each streamed chunk
// -> chat.completion.chunk with a `delta` (the first delta of each choice carries the role).

import { withFields } from '../../util/objects.js';

type Json = Record<string, unknown>;

interface CompletionChoice {
  index?: number;
  text?: string;
  finish_reason?: string | null;
  stop_reason?: unknown;
}

function chatId(id: unknown): unknown {
  return typeof id === 'string' && id.startsWith('cmpl-') ? `chat${id}` : id;
}

/** Non-streamed: a text_completion body to a chat.completion body. */
export function completionToChat(completion: unknown): unknown {
  if (!completion || typeof completion !== 'object') return completion;
  const c = completion as Json;
  const choices = Array.isArray(c.choices) ? (c.choices as CompletionChoice[]) : [];
  return withFields(c, {
    id: chatId(c.id),
    object: 'chat.completion',
    choices: choices.map((ch, i) => {
      const choice: Json = {
        index: ch.index ?? i,
        message: { role: 'assistant', content: ch.text ?? '' },
        logprobs: null,
        finish_reason: ch.finish_reason ?? null,
      };
      if (ch.stop_reason !== undefined) choice.stop_reason = ch.stop_reason;
      return choice;
    }),
  });
}

/** Streamed: converts chunks of one stream, remembering which choices already sent their role. */
export class ChatChunkConverter {
  private readonly roleSent = new Set<number>();

  convert(chunk: unknown): unknown {
    if (!chunk || typeof chunk !== 'object') return chunk;
    const c = chunk as Json;
    if (c.error !== undefined) return chunk; // an in-stream error passes as is
    const choices = Array.isArray(c.choices) ? (c.choices as CompletionChoice[]) : [];
    // withFields, not spread: a spread object given more fields outlives scavenges on Node 20 (src/util/objects.ts).
    return withFields(c, {
      id: chatId(c.id),
      object: 'chat.completion.chunk',
      choices: choices.map((ch, i) => {
        const index = ch.index ?? i;
        const delta: Json = {};
        if (!this.roleSent.has(index)) {
          delta.role = 'assistant';
          this.roleSent.add(index);
        }
        if (ch.text !== undefined && ch.text !== '') delta.content = ch.text;
        else if (delta.role) delta.content = '';
        return { index, delta, logprobs: null, finish_reason: ch.finish_reason ?? null };
      }),
    });
  }
}
