// What the frontend needs from a tokenizer: text <-> token ids, and a name for /v1/models and logs.
export interface TextTokenizer {
  readonly name: string;
  encode(text: string): Uint32Array;
  decode(ids: ArrayLike<number>): string;
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
