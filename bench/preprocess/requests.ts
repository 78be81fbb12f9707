// The preprocess suite's requests: a completions body with a text prompt and a chat body (a system
// message and a user message), each close to a given number of tokens with the real tokenizer.
import { promptText } from '../lib/prompt-text.js';

export type RequestKind = 'text' | 'chat';

export const MODEL = 'bench';
const SYSTEM = 'You are a helpful assistant.';

export interface BenchRequest {
  kind: RequestKind;
  /** Prompt tokens the router will hash (the rendered chat for chat requests). */
  tokens: number;
  body: Uint8Array;
}

/** A request of about `tokens` prompt tokens; `count` tokenizes a text (the chat's user message is sized the same way). */
export function benchRequest(kind: RequestKind, tokens: number, count: (text: string) => number): BenchRequest {
  const text = promptText(tokens, count);
  const common = { model: MODEL, max_tokens: 4, stream: true, stream_options: { include_usage: true } };
  const json =
    kind === 'text'
      ? { ...common, prompt: text }
      : {
          ...common,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: text },
          ],
        };
  return { kind, tokens, body: Buffer.from(JSON.stringify(json)) };
}
