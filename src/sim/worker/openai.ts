// The OpenAI API as vLLM serves it: request parsing and validation (every mistake a 400 with an
// OpenAI-style body), the built-in chat template, and the response and stream chunk shapes.
import type { makeUsage } from '../../engines/usage.js';
import { byteTokenizer } from '../../preprocess/byte-tokenizer.js';
import { invalidRequest } from './errors.js';

export type Endpoint = 'completions' | 'chat';

export interface InferenceRequest {
  endpoint: Endpoint;
  /** The model asked for (any name is served; the response echoes it). */
  model: string | undefined;
  promptTokens: Uint32Array;
  maxTokens: number;
  stream: boolean;
  includeUsage: boolean;
  ignoreEos: boolean;
  /** The body's `priority` as the engine received it (its kind's convention; 0 when absent). */
  priority: number;
  /** The parsed body, for the handoff fields of each engine kind. */
  body: Record<string, unknown>;
}

export interface ParseOptions {
  /** Completions default to OpenAI's 16 tokens; chat to this many. */
  defaultChatMaxTokens: number;
}

const U32_MAX = 0xffff_ffff;

export function parseJsonBody(bytes: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (err) {
    throw invalidRequest(`request body is not valid JSON: ${(err as Error).message}`, 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('request body must be a JSON object', 'invalid_json');
  }
  return value as Record<string, unknown>;
}

export function parseInferenceRequest(endpoint: Endpoint, body: Record<string, unknown>, opts: ParseOptions): InferenceRequest {
  const model = optionalString(body.model, 'model');
  const promptTokens = endpoint === 'completions' ? parsePrompt(body.prompt) : byteTokenizer.encode(renderChat(body.messages));
  if (promptTokens.length === 0) throw invalidRequest('the prompt is empty', 'empty_prompt');

  let maxTokens = endpoint === 'completions' ? 16 : opts.defaultChatMaxTokens;
  const fromMaxTokens = optionalPositiveInt(body.max_tokens, 'max_tokens');
  const fromCompletion = endpoint === 'chat' ? optionalPositiveInt(body.max_completion_tokens, 'max_completion_tokens') : undefined;
  if (fromCompletion !== undefined) maxTokens = fromCompletion;
  else if (fromMaxTokens !== undefined) maxTokens = fromMaxTokens;

  const n = body.n;
  if (n !== undefined && n !== null && n !== 1)
    throw invalidRequest(`n must be 1 (the simulated worker returns one choice), got ${JSON.stringify(n)}`, 'unsupported_parameter');

  const stream = optionalBoolean(body.stream, 'stream') ?? false;
  let includeUsage = false;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) throw invalidRequest('stream_options can only be set when stream is true', 'invalid_stream_options');
    if (typeof so !== 'object' || Array.isArray(so)) throw invalidRequest('stream_options must be an object', 'invalid_stream_options');
    includeUsage = optionalBoolean((so as Record<string, unknown>).include_usage, 'stream_options.include_usage') ?? false;
  }
  const ignoreEos = optionalBoolean(body.ignore_eos, 'ignore_eos') ?? false;
  const priority = body.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) throw invalidRequest(`priority must be an integer, got ${JSON.stringify(priority)}`);
  return { endpoint, model, promptTokens, maxTokens, stream, includeUsage, ignoreEos, priority, body };
}

/** A completions prompt: text (byte-tokenized) or token ids; a batch of one is unwrapped. */
function parsePrompt(prompt: unknown): Uint32Array {
  if (prompt === undefined || prompt === null) throw invalidRequest('prompt is required', 'missing_prompt');
  if (typeof prompt === 'string') return byteTokenizer.encode(prompt);
  if (!Array.isArray(prompt)) throw invalidRequest('prompt must be a string, an array of token ids, or a batch of one of these', 'invalid_prompt');
  if (prompt.length === 0) throw invalidRequest('the prompt is empty', 'empty_prompt');
  if (typeof prompt[0] === 'string' || Array.isArray(prompt[0])) {
    if (prompt.length > 1) {
      throw invalidRequest(
        `batched prompts are not supported by the simulated worker (got ${prompt.length}); send one prompt per request`,
        'batch_not_supported',
      );
    }
    return parsePrompt(prompt[0]);
  }
  const ids = new Uint32Array(prompt.length);
  for (let i = 0; i < prompt.length; i++) {
    const t = prompt[i];
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > U32_MAX) {
      throw invalidRequest(`prompt token ids must be integers in [0, ${U32_MAX}], got ${JSON.stringify(t)} at index ${i}`, 'invalid_prompt');
    }
    ids[i] = t;
  }
  return ids;
}

/**
 * The built-in chat template: `<|role|>\n{content}<|end|>\n` per message, then the assistant
 * header. Plain text, so the byte tokenizer (and a router using it) sees the same token ids.
 */
export function renderChat(messages: unknown): string {
  if (!Array.isArray(messages) || messages.length === 0) throw invalidRequest('messages must be a non-empty array', 'invalid_messages');
  let out = '';
  messages.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw invalidRequest(`messages[${i}] must be an object`, 'invalid_messages');
    const { role, content } = m as Record<string, unknown>;
    if (typeof role !== 'string' || role === '') throw invalidRequest(`messages[${i}].role must be a non-empty string`, 'invalid_messages');
    out += `<|${role}|>\n${messageText(content, i)}<|end|>\n`;
  });
  return `${out}<|assistant|>\n`;
}

function messageText(content: unknown, i: number): string {
  if (content === null || content === undefined) return ''; // e.g. an assistant turn with tool calls only
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidRequest(`messages[${i}].content must be a string or an array of content parts`, 'invalid_messages');
  return content
    .map((part, j) => {
      const p = part as Record<string, unknown> | null;
      if (p === null || typeof p !== 'object' || p.type !== 'text' || typeof p.text !== 'string') {
        throw invalidRequest(
          `messages[${i}].content[${j}] must be a text part {"type":"text","text":...} (the simulated worker is text only)`,
          'invalid_messages',
        );
      }
      return p.text;
    })
    .join('');
}

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${name} must be a string, got ${JSON.stringify(v)}`);
  return v;
}

function optionalBoolean(v: unknown, name: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`${name} must be a boolean, got ${JSON.stringify(v)}`);
  return v;
}

function optionalPositiveInt(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > U32_MAX) {
    throw invalidRequest(`${name} must be an integer >= 1, got ${JSON.stringify(v)}`);
  }
  return v;
}

// ---- responses -------------------------------------------------------------------------------

export type FinishReason = 'length' | 'stop' | 'abort';

export type Usage = ReturnType<typeof makeUsage>;

/** What is common to every response and chunk of one request. */
export interface ResponseHeader {
  endpoint: Endpoint;
  id: string;
  created: number;
  model: string;
}

export const responseId = (endpoint: Endpoint, requestId: string) => `${endpoint === 'chat' ? 'chatcmpl' : 'cmpl'}-${requestId}`;

export function fullResponse(
  h: ResponseHeader,
  text: string,
  finishReason: FinishReason,
  u: Usage,
  extra: { top?: Record<string, unknown>; choice?: Record<string, unknown> } = {},
): Record<string, unknown> {
  const choice =
    h.endpoint === 'chat'
      ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason, stop_reason: null, ...extra.choice }
      : { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null, ...extra.choice };
  return {
    id: h.id,
    object: h.endpoint === 'chat' ? 'chat.completion' : 'text_completion',
    created: h.created,
    model: h.model,
    choices: [choice],
    usage: u,
    ...extra.top,
  };
}

const chunkObject = (h: ResponseHeader) => (h.endpoint === 'chat' ? 'chat.completion.chunk' : 'text_completion');

/** The opening chunk of a chat stream (vLLM sends the role with empty content first). */
export function chatRoleChunk(h: ResponseHeader): Record<string, unknown> {
  return {
    id: h.id,
    object: chunkObject(h),
    created: h.created,
    model: h.model,
    choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
  };
}

export function textChunk(h: ResponseHeader, text: string, finishReason: FinishReason | null, choiceExtra?: Record<string, unknown>): Record<string, unknown> {
  const choice =
    h.endpoint === 'chat'
      ? { index: 0, delta: { content: text }, logprobs: null, finish_reason: finishReason, stop_reason: null, ...choiceExtra }
      : { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null, ...choiceExtra };
  return { id: h.id, object: chunkObject(h), created: h.created, model: h.model, choices: [choice] };
}

/** The include_usage chunk: last before [DONE], with empty choices. */
export function usageChunk(h: ResponseHeader, u: Usage): Record<string, unknown> {
  return { id: h.id, object: chunkObject(h), created: h.created, model: h.model, choices: [], usage: u };
}

export function modelList(names: readonly string[], created: number): Record<string, unknown> {
  return {
    object: 'list',
    data: names.map((id) => ({ id, object: 'model', created, owned_by: 'kvroute-sim', root: id, parent: null, permission: [] })),
  };
}
