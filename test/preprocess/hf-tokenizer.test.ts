import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatTemplate, parseChatMessages } from '../../src/preprocess/chat-template.js';
import { HfTokenizer, loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';

// A small but real model directory (test/fixtures/tiny-model): a WordLevel tokenizer.json with a
// whitespace pre-tokenizer, and a ChatML template in its tokenizer_config.json.
const TINY_MODEL = fileURLToPath(new URL('../fixtures/tiny-model', import.meta.url));

describe('HfTokenizer', () => {
  let tok: HfTokenizer;
  beforeAll(async () => {
    tok = await loadHfTokenizer(TINY_MODEL);
  });

  it('loads a model directory and encodes text to the vocabulary ids', () => {
    expect(tok.name).toBe(TINY_MODEL);
    expect(Array.from(tok.encode('hello world'))).toEqual([5, 6]);
    expect(Array.from(tok.encode('hello mars'))).toEqual([5, 0]);
  });

  it('renders the chat template from tokenizer_config.json and tokenizes its special tokens', () => {
    const text = tok.chatTemplate!.render([{ role: 'user', content: 'hello' }]);
    expect(text).toBe('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.chatTemplate!.render([{ role: 'user', content: 'hello' }])).toBe(new ChatTemplate(CHATML_TEMPLATE).render([{ role: 'user', content: 'hello' }]));
    const ids = Array.from(tok.encode(text));
    expect(ids[0]).toBe(1);
    expect(ids).toContain(2);
    expect(ids).toContain(5);
  });

  it('refuses something that is not a tokenizer.json, and a directory without one', async () => {
    expect(() => new HfTokenizer({ tokenizer: null as unknown as object })).toThrow(TypeError);
    await expect(loadHfTokenizer(join(TINY_MODEL, 'missing'))).rejects.toThrow(/tokenizer\.json/);
  });
});

describe('ChatTemplate', () => {
  it('passes the special tokens of the config to the template', () => {
    const t = new ChatTemplate('{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}', { bos_token: '<s>' });
    expect(t.render([{ role: 'user', content: 'hi' }])).toBe('<s>hi');
  });

  it('gives the template every field of a message (tool calls, names), content flattened to text', () => {
    const messages = parseChatMessages([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', name: 'get_weather', content: [{ type: 'text', text: 'sunny' }] },
    ]);
    expect(messages[0]).toMatchObject({ role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather' } }] });
    expect(messages[1]).toMatchObject({ role: 'tool', tool_call_id: 'c1', name: 'get_weather', content: 'sunny' });
    const t = new ChatTemplate(
      "{% for m in messages %}{% if m.tool_calls %}[call {{ m.tool_calls[0].function.name }}]{% elif m.role == 'tool' %}[{{ m.tool_call_id }}: {{ m.content }}]{% endif %}{% endfor %}",
    );
    expect(t.render(messages, false)).toBe('[call get_weather][c1: sunny]');
  });

  it('parses OpenAI messages, including text content parts', () => {
    expect(parseChatMessages([{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }])).toEqual([
      { role: 'user', content: 'ab' },
    ]);
  });

  it('refuses malformed messages with TypeError', () => {
    expect(() => parseChatMessages([])).toThrow(TypeError);
    expect(() => parseChatMessages('hi')).toThrow(/messages/);
    expect(() => parseChatMessages([{ content: 'x' }])).toThrow(/role/);
    expect(() => parseChatMessages([{ role: 'user', content: 5 }])).toThrow(/content/);
    expect(() => parseChatMessages([{ role: 'user', content: [{ type: 'image_url' }] }])).toThrow(/text part/);
  });
});
