import { describe, expect, it } from 'vitest';
import { OpenAiError } from '../../../src/sim/worker/errors.js';
import { chatRoleChunk, fullResponse, parseInferenceRequest, parseJsonBody, renderChat, textChunk, usageChunk } from '../../../src/sim/worker/openai.js';
import { makeUsage } from '../../../src/engines/usage.js';

const opts = { defaultChatMaxTokens: 256 };
const parse = (endpoint: 'completions' | 'chat', body: Record<string, unknown>) => parseInferenceRequest(endpoint, body, opts);

function badRequest(fn: () => unknown, code?: string): OpenAiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OpenAiError);
    const e = err as OpenAiError;
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    if (code) expect(e.code).toBe(code);
    return e;
  }
  throw new Error('expected a 400');
}

describe('parseInferenceRequest', () => {
  it('takes token-id prompts as they are and text prompts as UTF-8 bytes', () => {
    expect(Array.from(parse('completions', { prompt: [5, 6, 7] }).promptTokens)).toEqual([5, 6, 7]);
    expect(Array.from(parse('completions', { prompt: 'hé' }).promptTokens)).toEqual([0x68, 0xc3, 0xa9]);
    expect(Array.from(parse('completions', { prompt: [[9, 8]] }).promptTokens)).toEqual([9, 8]);
    expect(Array.from(parse('completions', { prompt: ['a'] }).promptTokens)).toEqual([0x61]);
  });

  it('defaults and caps max tokens as OpenAI does', () => {
    expect(parse('completions', { prompt: 'x' }).maxTokens).toBe(16);
    expect(parse('chat', { messages: [{ role: 'user', content: 'x' }] }).maxTokens).toBe(256);
    expect(parse('completions', { prompt: 'x', max_tokens: 3 }).maxTokens).toBe(3);
    expect(parse('chat', { messages: [{ role: 'user', content: 'x' }], max_tokens: 3, max_completion_tokens: 5 }).maxTokens).toBe(5);
    expect(parse('completions', { prompt: 'x', max_tokens: null }).maxTokens).toBe(16);
  });

  it('reads stream, include_usage and ignore_eos', () => {
    const r = parse('completions', { prompt: 'x', stream: true, stream_options: { include_usage: true }, ignore_eos: true });
    expect(r).toMatchObject({ stream: true, includeUsage: true, ignoreEos: true });
    expect(parse('completions', { prompt: 'x' })).toMatchObject({ stream: false, includeUsage: false, ignoreEos: false });
  });

  it('renders chat messages through the built-in template', () => {
    const text = renderChat([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi' },
          { type: 'text', text: '!' },
        ],
      },
      { role: 'assistant', content: null },
    ]);
    expect(text).toBe('<|system|>\nBe brief.<|end|>\n<|user|>\nHi!<|end|>\n<|assistant|>\n<|end|>\n<|assistant|>\n');
    expect(Buffer.from(parse('chat', { messages: [{ role: 'user', content: 'Hi' }] }).promptTokens).toString()).toBe('<|user|>\nHi<|end|>\n<|assistant|>\n');
  });

  it('refuses bad input with OpenAI-style 400s', () => {
    badRequest(() => parse('completions', {}), 'missing_prompt');
    badRequest(() => parse('completions', { prompt: '' }), 'empty_prompt');
    badRequest(() => parse('completions', { prompt: [] }), 'empty_prompt');
    badRequest(() => parse('completions', { prompt: 42 }), 'invalid_prompt');
    badRequest(() => parse('completions', { prompt: [1, -2] }), 'invalid_prompt');
    badRequest(() => parse('completions', { prompt: [1, 2 ** 32] }), 'invalid_prompt');
    badRequest(() => parse('completions', { prompt: [1.5] }), 'invalid_prompt');
    expect(badRequest(() => parse('completions', { prompt: ['a', 'b'] }), 'batch_not_supported').message).toMatch(/batched prompts are not supported/);
    badRequest(() => parse('completions', { prompt: 'x', max_tokens: 0 }));
    badRequest(() => parse('completions', { prompt: 'x', max_tokens: '5' }));
    badRequest(() => parse('completions', { prompt: 'x', n: 2 }), 'unsupported_parameter');
    badRequest(() => parse('completions', { prompt: 'x', stream: 'yes' }));
    badRequest(() => parse('completions', { prompt: 'x', stream_options: { include_usage: true } }), 'invalid_stream_options');
    badRequest(() => parse('completions', { prompt: 'x', model: 7 }));
    badRequest(() => parse('chat', { messages: [] }), 'invalid_messages');
    badRequest(() => parse('chat', { messages: [{ content: 'x' }] }), 'invalid_messages');
    badRequest(() => parse('chat', { messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }), 'invalid_messages');
    badRequest(() => parse('chat', { messages: 'hi' }), 'invalid_messages');
  });
});

describe('parseJsonBody', () => {
  it('parses a JSON object and refuses anything else', () => {
    expect(parseJsonBody(Buffer.from('{"a":1}'))).toEqual({ a: 1 });
    badRequest(() => parseJsonBody(Buffer.from('{')), 'invalid_json');
    badRequest(() => parseJsonBody(Buffer.from('[1]')), 'invalid_json');
    badRequest(() => parseJsonBody(Buffer.from('')), 'invalid_json');
  });
});

describe('response shapes', () => {
  const completion = { endpoint: 'completions' as const, id: 'cmpl-1', created: 100, model: 'm' };
  const chat = { ...completion, endpoint: 'chat' as const, id: 'chatcmpl-1' };
  const u = makeUsage(10, 2, 8);

  it('reports usage with cached tokens', () => {
    expect(u).toEqual({ prompt_tokens: 10, total_tokens: 12, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 8 } });
  });

  it('builds vLLM-shaped non-streamed responses', () => {
    expect(fullResponse(completion, 'ab', 'length', u, { top: { kv_transfer_params: null } })).toEqual({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 100,
      model: 'm',
      choices: [{ index: 0, text: 'ab', logprobs: null, finish_reason: 'length', stop_reason: null }],
      usage: u,
      kv_transfer_params: null,
    });
    const c = fullResponse(chat, 'ab', 'stop', u, { choice: { disaggregated_params: { request_type: 'context_only' } } }) as {
      object: string;
      choices: unknown[];
    };
    expect(c.object).toBe('chat.completion');
    expect(c.choices[0]).toMatchObject({
      message: { role: 'assistant', content: 'ab' },
      finish_reason: 'stop',
      disaggregated_params: { request_type: 'context_only' },
    });
  });

  it('builds stream chunks and the usage chunk with empty choices', () => {
    expect(textChunk(completion, 'a', null)).toMatchObject({ object: 'text_completion', choices: [{ index: 0, text: 'a', finish_reason: null }] });
    expect(textChunk(chat, 'a', 'length')).toMatchObject({ object: 'chat.completion.chunk', choices: [{ delta: { content: 'a' }, finish_reason: 'length' }] });
    expect(chatRoleChunk(chat)).toMatchObject({ choices: [{ delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    expect(usageChunk(chat, u)).toEqual({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 100, model: 'm', choices: [], usage: u });
  });
});
