// What the frontend needs from a tokenizer: text <-> token ids, and a name for /v1/models and logs.
import type { NativeTextTokenizer } from '../core/tokenizer.js';

export interface TextTokenizer {
  readonly name: string;
  encode(text: string): Uint32Array;
  decode(ids: ArrayLike<number>): string;
  /**
   * The same tokenizer run natively, when it has one: request bodies are then read, rendered and
   * tokenized in one native call (src/server/openai/request.ts). Must give the ids encode gives.
   */
  readonly native?: NativeTextTokenizer;
}

/**
 * An OpenAI chat message as the chat template sees it: content flattened to text, every other
 * field (name, tool_calls, tool_call_id, ...) as the client sent it, since templates render them.
 */
export interface ChatMessage {
  role: string;
  content: string;
  [field: string]: unknown;
}
