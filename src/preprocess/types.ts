// What the frontend needs from a tokenizer: text <-> token ids, and a name for /v1/models and logs.
export interface TextTokenizer {
  readonly name: string;
  encode(text: string): Uint32Array;
  decode(ids: ArrayLike<number>): string;
}

export interface ChatMessage {
  role: string;
  content: string;
}
