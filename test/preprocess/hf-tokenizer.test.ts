import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatTemplate, parseChatMessages } from '../../src/preprocess/chat-template.js';
import { HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';

// A small but real tokenizer.json (WordLevel model, whitespace pre-tokenizer) with a ChatML
// template in its config, as a model directory would ship them.
const vocab = ['<unk>', '<|im_start|>', '<|im_end|>', 'user', 'assistant', 'hello', 'world', '\n'];
const tokenizerJson = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [0, 1, 2].map((id) => ({
    id,
    content: vocab[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  })),
  normalizer: null,
  pre_tokenizer: { type: 'Whitespace' },
  post_processor: null,
  decoder: null,
  model: { type: 'WordLevel', vocab: Object.fromEntries(vocab.map((t, i) => [t, i])), unk_token: '<unk>' },
};

describe('HfTokenizer', () => {
  const tok = new HfTokenizer({ tokenizer: tokenizerJson, config: { chat_template: CHATML_TEMPLATE } }, 'tiny');

  it('encodes text to the vocabulary ids', () => {
    expect(Array.from(tok.encode('hello world'))).toEqual([5, 6]);
    expect(Array.from(tok.encode('hello mars'))).toEqual([5, 0]);
  });

  it('renders the chat template from tokenizer_config.json and tokenizes its special tokens', () => {
    const text = tok.chatTemplate!.render([{ role: 'user', content: 'hello' }]);
    expect(text).toBe('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
    const ids = Array.from(tok.encode(text));
    expect(ids[0]).toBe(1);
    expect(ids).toContain(2);
    expect(ids).toContain(5);
  });

  it('refuses something that is not a tokenizer.json', () => {
    expect(() => new HfTokenizer({ tokenizer: null as unknown as object })).toThrow(TypeError);
  });
});

describe('ChatTemplate', () => {
  it('passes the special tokens of the config to the template', () => {
    const t = new ChatTemplate('{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}', { bos_token: '<s>' });
    expect(t.render([{ role: 'user', content: 'hi' }])).toBe('<s>hi');
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
