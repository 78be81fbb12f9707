import { describe, expect, it } from 'vitest';
import { ChatChunkConverter, completionToChat } from '../../../src/server/openai/chat.js';

describe('completionToChat', () => {
  it('converts a text_completion into a chat.completion', () => {
    const out = completionToChat({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 5,
      model: 'm',
      choices: [{ index: 0, text: 'hello', logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } },
    });
    expect(out).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 5,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });
});

describe('ChatChunkConverter', () => {
  it('gives the role on the first delta of each choice, content after, and keeps usage chunks', () => {
    const c = new ChatChunkConverter();
    const chunk = (text: string, finish: string | null = null) => ({
      id: 'cmpl-9',
      object: 'text_completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, text, finish_reason: finish }],
    });
    expect(c.convert(chunk('a'))).toMatchObject({
      id: 'chatcmpl-9',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'a' }, finish_reason: null }],
    });
    expect(c.convert(chunk('b'))).toMatchObject({ choices: [{ delta: { content: 'b' } }] });
    expect((c.convert(chunk('b')) as { choices: { delta: object }[] }).choices[0].delta).not.toHaveProperty('role');
    expect(c.convert(chunk('', 'stop'))).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }] });
    const usage = c.convert({ id: 'cmpl-9', object: 'text_completion', choices: [], usage: { prompt_tokens: 1 } });
    expect(usage).toMatchObject({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1 } });
  });
});
