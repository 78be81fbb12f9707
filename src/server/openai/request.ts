// From request bytes to what routing needs: a checked JSON body, its model, the prompt as token ids
// (tokenized once, chat template applied), the routing hints and the request id.
//
// Chat: by default a chat request is rendered with the chat template, tokenized, and sent to the
// engine's /v1/completions with the token ids as `prompt` (the engine's KV blocks then hash exactly
// like the router's); the answer is converted back to chat.completion(.chunk) (see chat.ts).
// Requests that need the engine's own chat machinery (tools, response_format, chat logprobs, custom
// templates) are forwarded to /v1/chat/completions untouched and tokenized for routing only.
import { randomUUID } from 'node:crypto';
import { ChatRenderError } from '../../core/chat-template.js';
import { parseChatMessages, type ChatTemplate } from '../../preprocess/chat-template.js';
import type { TextTokenizer } from '../../preprocess/types.js';
import { describe, isShortVisibleAscii } from '../../util/validate.js';
import { parseRoutingHints, type RoutingHints } from '../../routing/hints.js';
import { badRequest, HttpError, notFound } from '../call/errors.js';

import type { OpenAiRoute } from '../../engines/types.js';
import { copyFields } from '../../util/objects.js';
import { scanTokenPrompt, type ScannedPrompt } from '../../core/prompt-scan.js';
import type { NativeTextTokenizer } from '../../core/tokenizer.js';
import { RawJson, tokenIdsJson } from '../../engines/json.js';
import { nestsDeeperThan } from '../../util/json-depth.js';
export type { OpenAiRoute };

export type { RoutingHints };

export interface PreparedRequest {
  /** The route the client called. */
  clientRoute: OpenAiRoute;
  /** The engine route the body goes to (chat may become completions). */
  engineRoute: OpenAiRoute;
  /** Body for the engine: the client's, with the prompt as token ids (and chat converted). */
  body: Record<string, unknown>;
  tokens: Uint32Array;
  stream: boolean;
  /** The engine's completions answer must be converted to chat format. */
  chatAsCompletions: boolean;
  hints: RoutingHints;
  /** `body` is exactly the client's JSON (nothing removed, added or replaced): its bytes can go as they came. */
  verbatim: boolean;
}

export interface Preprocessor {
  tokenizer: TextTokenizer;
  /**
   * The native tokenizer request bodies are read with (default: the tokenizer's own): the
   * router's carries its prefix cache. Gives the ids `tokenizer.encode` gives.
   */
  nativeTokenizer?: NativeTextTokenizer;
  chatTemplate: ChatTemplate;
  models: readonly string[];
  /** The session affinity header, when affinity is on. */
  sessionHeader?: string;
  /** The largest max_tokens / max_completion_tokens a request may ask for (default: no cap). */
  maxTokensLimit?: number;
}

const MAX_PROMPT_TOKENS = 1 << 22;
/** Bodies nesting deeper are refused (a chat message with content parts is 4 levels deep). */
export const MAX_JSON_DEPTH = 64;

/** The client's X-Request-Id when well-formed, otherwise a new one; a malformed id is a 400. */
export function requestIdOf(header: string | undefined): string {
  if (header === undefined || header === '') return randomUUID();
  if (!isShortVisibleAscii(header)) {
    throw badRequest('X-Request-Id must be 1 to 256 visible ASCII characters', 'invalid_request_id');
  }
  return header;
}

export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) throw badRequest('request body is empty; expected a JSON object', 'invalid_json');
  return parseJsonText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
}

function parseJsonText(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw badRequest(`request body is not valid JSON: ${(err as Error).message}`, 'invalid_json');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(`request body must be a JSON object, got ${describe(value)}`, 'invalid_json');
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) throw badRequest(`request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`, 'invalid_json');
  return value as Record<string, unknown>;
}

/** A prompt read and tokenized natively from the request's bytes (see parseRequestBody). */
export interface ScannedRequest {
  tokens: Uint32Array;
  /** What was read: a completions prompt of token ids or of text, or a chat request's messages. */
  kind: 'ids' | 'text' | 'chat';
}

export interface RequestBody {
  /** The parsed body. With `scanned`, the field it read (`prompt`, or `messages` for chat) is a RawJson of its bytes. */
  json: Record<string, unknown>;
  scanned?: ScannedRequest;
}

/**
 * Parses a request body. A completions prompt of token ids (core/prompt-scan.ts) or of text, and
 * a chat request's messages (rendered with the chat template), are read and tokenized natively
 * from the bytes, with the tokenizer's native form, and only the rest is parsed here. Any other
 * body (and any body the native reader leaves alone, e.g. a malformed message) is parsed whole,
 * so every error reads as before.
 */
export function parseRequestBody(route: OpenAiRoute, bytes: Uint8Array, pre?: Preprocessor): RequestBody {
  const r = readerOf(route, bytes, pre);
  if (r.ids || !r.tokenizer) return withScanned(bytes, r.ids, 'ids');
  const tokenizer = r.tokenizer;
  const found = r.kind === 'text' ? tokenizer.encodePromptBody(bytes) : rendering(() => pre!.chatTemplate.compiled.encodeBody(tokenizer, bytes));
  return withScanned(bytes, found, r.kind);
}

/**
 * parseRequestBody with the text read, rendered and tokenized on a libuv thread (the JavaScript
 * thread goes on serving meanwhile): for bodies long enough that doing it inline would hold up
 * every other request. The same result, the same errors.
 */
export async function parseRequestBodyOffThread(route: OpenAiRoute, bytes: Uint8Array, pre: Preprocessor): Promise<RequestBody> {
  const r = readerOf(route, bytes, pre);
  if (r.ids || !r.tokenizer) return withScanned(bytes, r.ids, 'ids');
  let found: ScannedPrompt | undefined;
  try {
    found = r.kind === 'text' ? await r.tokenizer.encodePromptBodyAsync(bytes) : await pre.chatTemplate.compiled.encodeBodyAsync(r.tokenizer, bytes);
  } catch (err) {
    throw refusal(err);
  }
  return withScanned(bytes, found, r.kind);
}

/** How a body is read: a completions prompt of token ids at once (never tokenized), else its text or messages through `tokenizer`. */
function readerOf(
  route: OpenAiRoute,
  bytes: Uint8Array,
  pre: Preprocessor | undefined,
): { ids?: ScannedPrompt; tokenizer?: NativeTextTokenizer; kind: 'text' | 'chat' } {
  const tokenizer = nativeOf(pre);
  if (route !== '/v1/completions') return { tokenizer, kind: 'chat' };
  return { ids: idPrompt(bytes), tokenizer, kind: 'text' };
}

function nativeOf(pre: Preprocessor | undefined): NativeTextTokenizer | undefined {
  return pre?.nativeTokenizer ?? pre?.tokenizer.native;
}

/** A completions prompt of token ids, read natively (never tokenized: it stays inline). */
function idPrompt(bytes: Uint8Array): ScannedPrompt | undefined {
  return mayHoldTokenIds(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) ? scanTokenPrompt(bytes) : undefined;
}

/** The body around what the native reader read (it validated all of it), or the whole body parsed. */
function withScanned(bytes: Uint8Array, found: ScannedPrompt | undefined, kind: ScannedRequest['kind']): RequestBody {
  if (!found) return { json: parseJsonObject(bytes) };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The body with a placeholder where the value read stood.
  const json = parseJsonText(`${buf.toString('utf8', 0, found.start)}0${buf.toString('utf8', found.end)}`);
  json[kind === 'chat' ? 'messages' : 'prompt'] = RawJson.ofBytes(bytes.subarray(found.start, found.end));
  return { json, scanned: { tokens: found.tokens, kind } };
}

/** Runs a chat template, a refusal of the client's messages becoming a 400. */
function rendering<T>(render: () => T): T {
  try {
    return render();
  } catch (err) {
    throw refusal(err);
  }
}

function refusal(err: unknown): unknown {
  return err instanceof ChatRenderError ? badRequest(`the chat template cannot render these messages: ${err.message}`, 'chat_template_refused') : err;
}

const PROMPT_KEY = Buffer.from('"prompt"');

/**
 * False when the body's first `"prompt"` is followed by a string: a text prompt, which the
 * native scan would read to its end only to hand the body back. A guess that can only skip the
 * fast path, never change a result.
 */
function mayHoldTokenIds(buf: Buffer): boolean {
  const at = buf.indexOf(PROMPT_KEY);
  if (at < 0) return false;
  for (let i = at + PROMPT_KEY.length; i < buf.length; i++) {
    const c = buf[i];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x3a /* : */) continue;
    return c !== 0x22; /* " */
  }
  return false;
}

/** Parses, checks and preprocesses an OpenAI request body. */
export function prepareRequest(
  route: OpenAiRoute,
  body: Record<string, unknown>,
  headers: Record<string, string | undefined>,
  pre: Preprocessor,
  /** What parseRequestBody read natively (the field it read is then a RawJson). */
  scanned?: ScannedRequest,
): PreparedRequest {
  checkModel(body.model, pre.models);
  checkCommonFields(body, pre.maxTokensLimit);
  const hints = routingHints(headers, body.nvext, pre.sessionHeader);
  const stream = body.stream === true;
  const forEngine: Record<string, unknown> = copyFields(body);
  delete forEngine.nvext; // addressed to the router, not the engine
  if (forEngine.model === undefined) forEngine.model = pre.models[0];
  const untouched = !Object.hasOwn(body, 'nvext') && body.model !== undefined;

  if (route === '/v1/completions') {
    const tokens = scanned ? checkedLength(scanned.tokens) : completionPrompt(body.prompt, pre.tokenizer);
    // Token ids the client sent are already what the engine needs (the checks above passed).
    forEngine.prompt = scanned?.kind === 'ids' ? body.prompt : (clientIds(body.prompt) ?? tokenIdsJson(tokens));
    const verbatim = untouched && forEngine.prompt === body.prompt;
    return { clientRoute: route, engineRoute: route, body: forEngine, tokens, stream, chatAsCompletions: false, hints, verbatim };
  }

  const tokens = checkedLength(scanned ? scanned.tokens : chatTokens(body, pre));
  if (needsEngineChat(body)) {
    return { clientRoute: route, engineRoute: route, body: forEngine, tokens, stream, chatAsCompletions: false, hints, verbatim: untouched };
  }
  return {
    clientRoute: route,
    engineRoute: '/v1/completions',
    body: chatToCompletionsBody(forEngine, tokens),
    tokens,
    stream,
    chatAsCompletions: true,
    hints,
    verbatim: false,
  };
}

function checkModel(model: unknown, models: readonly string[]): void {
  if (model === undefined) return;
  if (typeof model !== 'string') throw badRequest(`'model' must be a string, got ${describe(model)}`, 'invalid_type');
  if (!models.includes(model)) {
    throw notFound(`The model '${model}' does not exist; this router serves ${models.map((m) => `'${m}'`).join(', ')}`, 'model_not_found');
  }
}

/** Type checks of the fields the router itself reads or rewrites. */
function checkCommonFields(body: Record<string, unknown>, maxTokensLimit = Number.MAX_SAFE_INTEGER): void {
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw badRequest(`'stream' must be a boolean, got ${describe(body.stream)}`, 'invalid_type');
  }
  for (const field of ['max_tokens', 'max_completion_tokens', 'n']) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
      throw badRequest(`'${field}' must be a positive integer, got ${typeof v === 'number' ? v : describe(v)}`, 'invalid_type');
    }
    // 1e20 is an integer too: past the cap it is refused as too large, not as a wrong type.
    if (field !== 'n' && v > maxTokensLimit) {
      throw badRequest(`'${field}' must be at most ${maxTokensLimit} (this router's max tokens limit), got ${v}`, 'max_tokens_too_large');
    }
  }
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (typeof so !== 'object' || Array.isArray(so)) throw badRequest(`'stream_options' must be an object, got ${describe(so)}`, 'invalid_type');
    const iu = (so as { include_usage?: unknown }).include_usage;
    if (iu !== undefined && typeof iu !== 'boolean') throw badRequest(`'stream_options.include_usage' must be a boolean`, 'invalid_type');
  }
  for (const field of ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty']) {
    const v = body[field];
    if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isFinite(v))) {
      throw badRequest(`'${field}' must be a number, got ${describe(v)}`, 'invalid_type');
    }
  }
}

/** A completions prompt as token ids: text, token ids, or a batch of exactly one of either. */
export function completionPrompt(prompt: unknown, tokenizer: TextTokenizer): Uint32Array {
  if (typeof prompt === 'string') return checkedLength(tokenizer.encode(prompt));
  if (!Array.isArray(prompt)) throw badRequest(`'prompt' must be a string or an array of token ids, got ${describe(prompt)}`, 'invalid_prompt');
  if (prompt.length === 0) throw badRequest("'prompt' must not be empty", 'invalid_prompt');
  if (typeof prompt[0] === 'number') return tokenIds(prompt);
  // A batch: [string] or [[ids]]. Several prompts would each need their own routing decision.
  if (prompt.length > 1) {
    throw badRequest(`batched prompts are not supported: send one prompt per request (got ${prompt.length})`, 'batch_not_supported');
  }
  const only = prompt[0];
  if (typeof only === 'string') return checkedLength(tokenizer.encode(only));
  if (Array.isArray(only) && only.length > 0) return tokenIds(only);
  throw badRequest("'prompt' must be a string, an array of token ids, or an array of one of either", 'invalid_prompt');
}

/** The client's own token-id array (flat, or a batch of one), to forward without copying. */
function clientIds(prompt: unknown): unknown[] | undefined {
  if (!Array.isArray(prompt) || prompt.length === 0) return undefined;
  if (typeof prompt[0] === 'number') return prompt;
  return Array.isArray(prompt[0]) ? (prompt[0] as unknown[]) : undefined;
}

function tokenIds(values: unknown[]): Uint32Array {
  if (values.length > MAX_PROMPT_TOKENS)
    throw new HttpError(413, 'invalid_request_error', 'prompt_too_long', `prompt has more than ${MAX_PROMPT_TOKENS} tokens`);
  const out = new Uint32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      throw badRequest(`prompt[${i}] must be a token id (an integer in [0, 2^32)), got ${typeof v === 'number' ? v : describe(v)}`, 'invalid_prompt');
    }
    out[i] = v;
  }
  return out;
}

function checkedLength(tokens: Uint32Array): Uint32Array {
  if (tokens.length === 0) throw badRequest('the prompt tokenizes to nothing', 'invalid_prompt');
  if (tokens.length > MAX_PROMPT_TOKENS)
    throw new HttpError(413, 'invalid_request_error', 'prompt_too_long', `prompt has more than ${MAX_PROMPT_TOKENS} tokens`);
  return tokens;
}

/** A chat body parsed in JavaScript: its messages checked, rendered (tools and template kwargs included) and tokenized. */
function chatTokens(body: Record<string, unknown>, pre: Preprocessor): Uint32Array {
  const messages = parseChatMessages(body.messages);
  const extras = { tools: body.tools ?? undefined, chat_template_kwargs: body.chat_template_kwargs ?? undefined };
  const text = rendering(() => pre.chatTemplate.render(messages, body.add_generation_prompt !== false, extras));
  return (pre.nativeTokenizer ?? pre.tokenizer).encode(text);
}

// Chat features only the engine's own chat endpoint implements.
const ENGINE_CHAT_FIELDS = [
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'response_format',
  'chat_template',
  'chat_template_kwargs',
  'continue_final_message',
  'audio',
  'modalities',
];

function needsEngineChat(body: Record<string, unknown>): boolean {
  if (body.logprobs === true || (body.top_logprobs !== undefined && body.top_logprobs !== null)) return true;
  return ENGINE_CHAT_FIELDS.some((f) => body[f] !== undefined && body[f] !== null);
}

// Chat-only fields that mean nothing to /v1/completions.
const CHAT_ONLY_FIELDS = [
  'messages',
  'max_completion_tokens',
  'add_generation_prompt',
  'parallel_tool_calls',
  'logprobs',
  'top_logprobs',
  'store',
  'metadata',
  'reasoning_effort',
  'service_tier',
  'prediction',
  'web_search_options',
];

function chatToCompletionsBody(chat: Record<string, unknown>, tokens: Uint32Array): Record<string, unknown> {
  const body: Record<string, unknown> = copyFields(chat);
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  for (const f of CHAT_ONLY_FIELDS) delete body[f];
  if (maxTokens !== undefined && maxTokens !== null) body.max_tokens = maxTokens;
  body.prompt = tokenIdsJson(tokens);
  return body;
}

/** Routing hints (PROTOCOLS.md section 4 headers, or Dynamo's `nvext`), parsed by the routing layer; a bad one is a 400. */
export function routingHints(headers: Record<string, string | undefined>, nvext: unknown, sessionHeader?: string): RoutingHints {
  try {
    return parseRoutingHints(headers, nvext, { sessionHeader });
  } catch (err) {
    if (err instanceof RangeError) throw badRequest(err.message, 'invalid_routing_hint');
    throw err;
  }
}
