import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatTemplate } from '../../../src/preprocess/chat-template.js';
import { byteTokenizer } from '../../../src/preprocess/byte-tokenizer.js';
import { HttpError } from '../../../src/server/call/errors.js';
import { RawJson, stringifyBody } from '../../../src/engines/json.js';
import {
  completionPrompt,
  routingHints as hintsOf,
  parseJsonObject,
  parseRequestBody,
  prepareRequest,
  requestIdOf,
  type Preprocessor,
} from '../../../src/server/openai/request.js';
import fc from 'fast-check';

const pre: Preprocessor = { tokenizer: byteTokenizer, chatTemplate: new ChatTemplate(CHATML_TEMPLATE), models: ['m1', 'm2'] };
const bytes = (s: string) => new TextEncoder().encode(s);
/** The JSON an engine receives for `body`. */
const sent = (body: Record<string, unknown>) => JSON.parse(stringifyBody(body)) as unknown;

function httpError(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error('expected an HttpError');
}

describe('parseJsonObject', () => {
  it('parses an object', () => {
    expect(parseJsonObject(bytes('{"a":1}'))).toEqual({ a: 1 });
  });
  it.each(['', '{"a":', '[1,2]', '"text"', 'null'])('refuses %j with 400 invalid_json', (text) => {
    const err = httpError(() => parseJsonObject(bytes(text)));
    expect(err.status).toBe(400);
    expect(err.code).toBe('invalid_json');
  });
  it('takes 64 levels of nesting and refuses more, also on the native scan path', () => {
    const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(parseJsonObject(bytes(`{"a":${nest(63)}}`))).toBeTruthy();
    for (const body of [`{"a":${nest(64)}}`, `{"prompt":[1,2],"a":${nest(64)}}`, `{"prompt":${nest(100_000)}}`]) {
      const err = httpError(() => parseRequestBody('/v1/completions', bytes(body)));
      expect(err.status).toBe(400);
      expect(err.code).toBe('invalid_json');
      expect(err.message).toBe('request body nests arrays and objects more than 64 levels deep');
    }
  });
});

describe('requestIdOf', () => {
  it('keeps a well-formed id and generates one when absent', () => {
    expect(requestIdOf('abc-123')).toBe('abc-123');
    expect(requestIdOf(undefined)).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdOf(undefined)).not.toBe(requestIdOf(undefined));
  });
  it('refuses ids that could not be echoed safely', () => {
    expect(httpError(() => requestIdOf('a b')).status).toBe(400);
    expect(httpError(() => requestIdOf('x'.repeat(300))).code).toBe('invalid_request_id');
  });
});

describe('completionPrompt', () => {
  it('tokenizes text and passes token ids through', () => {
    expect(Array.from(completionPrompt('hi', byteTokenizer))).toEqual([104, 105]);
    expect(Array.from(completionPrompt([1, 2, 3], byteTokenizer))).toEqual([1, 2, 3]);
    expect(Array.from(completionPrompt(['hi'], byteTokenizer))).toEqual([104, 105]);
    expect(Array.from(completionPrompt([[7, 8]], byteTokenizer))).toEqual([7, 8]);
  });
  it.each([
    [42, 'invalid_prompt'],
    [[], 'invalid_prompt'],
    [[1, -2], 'invalid_prompt'],
    [[1, 2.5], 'invalid_prompt'],
    [[1, 2 ** 32], 'invalid_prompt'],
    [['a', 'b'], 'batch_not_supported'],
    [[[1], [2]], 'batch_not_supported'],
    [[{}], 'invalid_prompt'],
    ['', 'invalid_prompt'],
  ])('refuses %j (%s)', (prompt, code) => {
    const err = httpError(() => completionPrompt(prompt, byteTokenizer));
    expect(err.status).toBe(400);
    expect(err.code).toBe(code);
  });
});

describe('parseRequestBody', () => {
  it('reads a token-id prompt natively and parses the rest, keeping the prompt as the client wrote it', () => {
    const text = '{"model":"m1", "prompt" : [5, 6,7], "max_tokens":4,"stream":true}';
    const r = parseRequestBody('/v1/completions', bytes(text));
    expect(r.scanned?.kind).toBe('ids');
    expect(Array.from(r.scanned!.tokens)).toEqual([5, 6, 7]);
    expect(r.json.prompt).toBeInstanceOf(RawJson);
    expect((r.json.prompt as RawJson).text).toBe('[5, 6,7]');
    expect(Object.keys(r.json)).toEqual(['model', 'prompt', 'max_tokens', 'stream']);
    expect(sent(r.json)).toEqual(JSON.parse(text));
  });

  it('parses whole what it does not read natively: batches, non-plain numbers, malformed messages, and text without a native tokenizer', () => {
    // (A nested "prompt" holding text ahead of the real one only skips the native path.)
    for (const text of [
      '{"prompt":[[1,2]]}',
      '{"prompt":[1.0,2]}',
      '{"prompt":[-0]}',
      '{"prompt":[1],"prompt":[2]}',
      '{"prompt":["a","b"]}',
      '{"prompt":"a","prompt":"b"}',
      '{"prompt":"\\ud800"}',
      '{"model":"m1"}',
      '{"nvext":{"prompt":"x"},"prompt":[1,2]}',
    ]) {
      const r = parseRequestBody('/v1/completions', bytes(text), pre);
      expect(r.scanned, text).toBeUndefined();
      expect(r.json, text).toEqual(JSON.parse(text));
    }
    expect(parseRequestBody('/v1/completions', bytes('{"prompt":"hi"}')).scanned).toBeUndefined();
    for (const text of ['{"messages":[],"prompt":[1]}', '{"messages":[{"content":"x"}]}', '{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}']) {
      const chat = parseRequestBody('/v1/chat/completions', bytes(text), pre);
      expect(chat.scanned, text).toBeUndefined();
      expect(chat.json, text).toEqual(JSON.parse(text));
    }
  });

  it('reads and tokenizes a text prompt natively, keeping it as the client wrote it', () => {
    for (const [text, prompt] of [
      ['{"model":"m1","prompt":"h\\u00e9 \\"x\\"","n":1}', 'hé "x"'],
      ['{"prompt": [ "one" ]}', 'one'],
    ] as const) {
      const r = parseRequestBody('/v1/completions', bytes(text), pre);
      expect(r.scanned?.kind).toBe('text');
      expect(Array.from(r.scanned!.tokens)).toEqual(Array.from(byteTokenizer.encode(prompt)));
      expect(sent(r.json)).toEqual(JSON.parse(text));
    }
  });

  it('renders and tokenizes a chat request natively, as the JavaScript path does', () => {
    const text =
      '{"model":"m1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],"stream":true}';
    const r = parseRequestBody('/v1/chat/completions', bytes(text), pre);
    expect(r.scanned?.kind).toBe('chat');
    expect(r.json.messages).toBeInstanceOf(RawJson);
    expect(sent(r.json)).toEqual(JSON.parse(text));
    const native = prepareRequest('/v1/chat/completions', r.json, {}, pre, r.scanned);
    const js = prepareRequest('/v1/chat/completions', JSON.parse(text) as Record<string, unknown>, {}, pre);
    expect(byteTokenizer.decode(native.tokens)).toBe('<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n');
    expect(Array.from(native.tokens)).toEqual(Array.from(js.tokens));
    expect(sent(native.body)).toEqual(sent(js.body));
  });

  it('answers 400 when the chat template refuses the messages, natively or not', () => {
    const strict = { ...pre, chatTemplate: new ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('user first, please') }}{% endif %}x") };
    const text = '{"messages":[{"role":"assistant","content":"hi"}]}';
    for (const err of [
      httpError(() => parseRequestBody('/v1/chat/completions', bytes(text), strict)),
      httpError(() => prepareRequest('/v1/chat/completions', JSON.parse(text) as Record<string, unknown>, {}, strict)),
    ]) {
      expect(err.status).toBe(400);
      expect(err.code).toBe('chat_template_refused');
      expect(err.message).toMatch(/user first, please/);
    }
  });

  it('gives malformed bodies the same errors as parseJsonObject', () => {
    for (const text of ['', '{"prompt":[1,2]', '[1,2]', '{"prompt":[1,2]} trailing', '{"prompt":[1,2],}']) {
      const err = httpError(() => parseRequestBody('/v1/completions', bytes(text)));
      expect(err.status).toBe(400);
      expect(err.message).toBe(httpError(() => parseJsonObject(bytes(text))).message);
    }
  });

  it('sends engines the same JSON for any body, read natively or not', () => {
    const other = fc.dictionary(
      fc.string({ maxLength: 6 }).filter((k) => k !== 'prompt' && k !== '__proto__'),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 4 },
    );
    const ids = fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(other, ids, fc.nat(4), fc.integer({ min: 0, max: 2 }), (rest, prompt, at, indent) => {
        const entries = Object.entries(rest);
        entries.splice(Math.min(at, entries.length), 0, ['prompt', prompt]);
        const text = JSON.stringify(Object.fromEntries(entries), null, indent);
        const r = parseRequestBody('/v1/completions', bytes(text));
        expect(Array.from(r.scanned!.tokens)).toEqual(prompt);
        expect(sent(r.json)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });
});

describe('prepareRequest', () => {
  it('sends completions with the prompt as token ids and the default model filled in', () => {
    const p = prepareRequest('/v1/completions', { prompt: 'ab', max_tokens: 3, stream: true, nvext: { backend_instance_id: 4 } }, {}, pre);
    expect(p.engineRoute).toBe('/v1/completions');
    expect(sent(p.body)).toEqual({ prompt: [97, 98], max_tokens: 3, stream: true, model: 'm1' });
    expect(p.stream).toBe(true);
    expect(p.hints).toEqual({ workerId: 4 });
    expect(Array.from(p.tokens)).toEqual([97, 98]);
  });

  it('turns a plain chat request into a completions request over the templated tokens', () => {
    const p = prepareRequest(
      '/v1/chat/completions',
      { model: 'm2', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 5, temperature: 0 },
      {},
      pre,
    );
    const text = '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';
    expect(p.engineRoute).toBe('/v1/completions');
    expect(p.chatAsCompletions).toBe(true);
    expect(sent(p.body)).toEqual({ model: 'm2', max_tokens: 5, temperature: 0, prompt: Array.from(byteTokenizer.encode(text)) });
    expect(byteTokenizer.decode(p.tokens)).toBe(text);
  });

  it('forwards chat requests that need the engine chat endpoint untouched', () => {
    const body = { messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f' } }] };
    const p = prepareRequest('/v1/chat/completions', body, {}, pre);
    expect(p.engineRoute).toBe('/v1/chat/completions');
    expect(p.chatAsCompletions).toBe(false);
    expect(p.body).toEqual({ ...body, model: 'm1' });
    expect(p.tokens.length).toBeGreaterThan(0);
  });

  it('says when the engine body is exactly the client JSON (its bytes can be forwarded)', () => {
    const ids = [5, 6, 7];
    const same = prepareRequest('/v1/completions', { model: 'm1', prompt: ids, stream: true, stream_options: { include_usage: true } }, {}, pre);
    expect(same.verbatim).toBe(true);
    expect(same.body.prompt).toBe(ids);
    const chat = { model: 'm1', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f' } }] };
    expect(prepareRequest('/v1/chat/completions', chat, {}, pre).verbatim).toBe(true);
    // Anything the router adds, removes or replaces makes the body its own.
    expect(prepareRequest('/v1/completions', { prompt: ids }, {}, pre).verbatim).toBe(false); // model filled in
    expect(prepareRequest('/v1/completions', { model: 'm1', prompt: ids, nvext: {} }, {}, pre).verbatim).toBe(false);
    expect(prepareRequest('/v1/completions', { model: 'm1', prompt: 'ab' }, {}, pre).verbatim).toBe(false); // text tokenized
    expect(prepareRequest('/v1/completions', { model: 'm1', prompt: [ids] }, {}, pre).verbatim).toBe(false); // batch of one unwrapped
    expect(prepareRequest('/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: 'hi' }] }, {}, pre).verbatim).toBe(false);
  });

  it('keeps a natively read prompt as the client wrote it, verbatim or re-serialised', () => {
    const text = '{"model":"m1","prompt":[9, 8, 7],"stream":true}';
    const r = parseRequestBody('/v1/completions', bytes(text));
    const p = prepareRequest('/v1/completions', r.json, {}, pre, r.scanned);
    expect(p.verbatim).toBe(true);
    expect(Array.from(p.tokens)).toEqual([9, 8, 7]);
    // The router changes the body (here: the default model): the prompt's own text is spliced in.
    const q = parseRequestBody('/v1/completions', bytes('{"prompt":[9, 8, 7]}'));
    const changed = prepareRequest('/v1/completions', q.json, {}, pre, q.scanned);
    expect(changed.verbatim).toBe(false);
    expect(stringifyBody(changed.body)).toBe('{"prompt":[9, 8, 7],"model":"m1"}');
  });

  it('answers 404 for an unknown model', () => {
    const err = httpError(() => prepareRequest('/v1/completions', { model: 'gpt-9', prompt: 'x' }, {}, pre));
    expect(err.status).toBe(404);
    expect(err.code).toBe('model_not_found');
    expect(err.message).toMatch(/'gpt-9' does not exist/);
  });

  it.each([
    [{ model: 5, prompt: 'x' }, /'model' must be a string/],
    [{ prompt: 'x', stream: 'yes' }, /'stream' must be a boolean/],
    [{ prompt: 'x', max_tokens: 0 }, /'max_tokens' must be a positive integer/],
    [{ prompt: 'x', max_tokens: '5' }, /'max_tokens' must be a positive integer/],
    [{ prompt: 'x', temperature: 'hot' }, /'temperature' must be a number/],
    [{ prompt: 'x', stream_options: [] }, /'stream_options' must be an object/],
    [{ prompt: 'x', nvext: 'w1' }, /'nvext' must be an object/],
  ])('refuses wrong types: %j', (body, message) => {
    const err = httpError(() => prepareRequest('/v1/completions', body as Record<string, unknown>, {}, pre));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(message);
  });

  it('refuses max_tokens and max_completion_tokens over the limit, naming it', () => {
    const capped: Preprocessor = { ...pre, maxTokensLimit: 4096 };
    expect(prepareRequest('/v1/completions', { prompt: 'x', max_tokens: 4096 }, {}, capped).body.max_tokens).toBe(4096);
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      const err = httpError(() => prepareRequest('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], [field]: 4097 }, {}, capped));
      expect(err.status).toBe(400);
      expect(err.code).toBe('max_tokens_too_large');
      expect(err.message).toBe(`'${field}' must be at most 4096 (this router's max tokens limit), got 4097`);
    }
    // n is not a token count: the limit does not apply to it.
    expect(() => prepareRequest('/v1/completions', { prompt: 'x', n: 5000 }, {}, capped)).not.toThrow();
  });

  it('refuses malformed chat messages with 400', () => {
    expect(() => prepareRequest('/v1/chat/completions', { messages: [] }, {}, pre)).toThrow(TypeError);
    expect(() => prepareRequest('/v1/chat/completions', { messages: [{ content: 'x' }] }, {}, pre)).toThrow(/role must be a non-empty string/);
  });
});

describe('routingHints', () => {
  it('reads the PROTOCOLS.md section 4 headers and nvext', () => {
    const h = hintsOf({ 'x-worker-instance-id': '12', 'x-prefill-instance-id': '3', 'x-dp-rank': '1', 'x-prefill-dp-rank': '0' }, { backend_instance_id: 12 });
    expect(h).toEqual({ workerId: 12, prefillWorkerId: 3, dpRank: 1, prefillDpRank: 0 });
    expect(hintsOf({}, { prefill_worker_id: 2, dp_rank: 1 })).toEqual({ prefillWorkerId: 2, dpRank: 1 });
    expect(hintsOf({}, undefined)).toEqual({});
  });
  it('refuses malformed hints', () => {
    expect(httpError(() => hintsOf({ 'x-worker-instance-id': 'w1' }, undefined)).code).toBe('invalid_routing_hint');
    expect(httpError(() => hintsOf({ 'x-dp-rank': '70000' }, undefined)).code).toBe('invalid_routing_hint');
    expect(httpError(() => hintsOf({}, { dp_rank: -1 })).code).toBe('invalid_routing_hint');
    expect(httpError(() => hintsOf({ 'x-worker-instance-id': '1' }, { backend_instance_id: 2 })).message).toMatch(/disagrees/);
  });
});
