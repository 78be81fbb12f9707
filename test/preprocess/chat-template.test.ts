import { describe, expect, it } from 'vitest';
import { ChatRenderError } from '../../src/core/chat-template.js';
import { ChatTemplate, parseChatMessages } from '../../src/preprocess/chat-template.js';

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
    expect(
      parseChatMessages([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ]),
    ).toEqual([{ role: 'user', content: 'ab' }]);
  });

  it('gives the template tools and template kwargs, and None for absent tools', () => {
    const t = new ChatTemplate('{{ tools is none }}|{% for t in tools or [] %}{{ t.function.name }}{% endfor %}|{{ flavour | default("-") }}');
    expect(t.render([{ role: 'user', content: 'x' }])).toBe('True||-');
    expect(
      t.render([{ role: 'user', content: 'x' }], true, { tools: [{ type: 'function', function: { name: 'f' } }], chat_template_kwargs: { flavour: 'mint' } }),
    ).toBe('False|f|mint');
  });

  it('renders lone surrogates as U+FFFD, as they reach the tokenizer', () => {
    expect(new ChatTemplate('{{ messages[0].content }}').render([{ role: 'user', content: 'a\ud800b' }])).toBe('a\ufffdb');
  });

  it('accepts HuggingFace generation blocks (assistant masks) and renders their body', () => {
    const t = new ChatTemplate(
      "{% for m in messages %}{%- if m.role == 'assistant' %}{% generation %}[{{ m.content }}]{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
    );
    expect(
      t.render(
        [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: 'a' },
        ],
        false,
      ),
    ).toBe('q[a]');
  });

  it('refuses a template that does not compile, and throws ChatRenderError when a render fails', () => {
    expect(() => new ChatTemplate('{% for m in messages %}')).toThrow(/does not compile/);
    expect(() => new ChatTemplate('')).toThrow(TypeError);
    const t = new ChatTemplate("{{ raise_exception('no ' + messages[0].role) }}");
    expect(() => t.render([{ role: 'user', content: 'x' }])).toThrow(ChatRenderError);
    expect(() => t.render([{ role: 'user', content: 'x' }])).toThrow(/no user/);
    expect(() => new ChatTemplate('{{ messages | tojson(indent="x", bad=1) }}').render([{ role: 'user', content: 'x' }])).toThrow(ChatRenderError);
  });

  it('refuses malformed messages with TypeError', () => {
    expect(() => parseChatMessages([])).toThrow(TypeError);
    expect(() => parseChatMessages('hi')).toThrow(/messages/);
    expect(() => parseChatMessages([{ content: 'x' }])).toThrow(/role/);
    expect(() => parseChatMessages([{ role: 'user', content: 5 }])).toThrow(/content/);
    expect(() => parseChatMessages([{ role: 'user', content: [{ type: 'image_url' }] }])).toThrow(/text part/);
  });
});
