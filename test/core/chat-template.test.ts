import { describe, expect, it } from 'vitest';
import { ChatRenderError, CompiledChatTemplate } from '../../src/core/chat-template.js';
import { NativeTextTokenizer } from '../../src/core/tokenizer.js';

const enc = (s: string) => new TextEncoder().encode(s);
const template = new CompiledChatTemplate('{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}', { bos_token: '<s>' });
const bytes = NativeTextTokenizer.bytes();

describe('CompiledChatTemplate', () => {
  it('renders a chat request body with where its messages stand, and tokenizes it in the same call', () => {
    const body = enc('{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}');
    const r = template.renderBody(body)!;
    expect(r.text).toBe('<s>user:hi;');
    expect(new TextDecoder().decode(body.subarray(r.start, r.end))).toBe('[{"role":"user","content":"hi"}]');
    const t = template.encodeBody(bytes, body)!;
    expect(Array.from(t.tokens)).toEqual(Array.from(enc('<s>user:hi;')));
    expect([t.start, t.end]).toEqual([r.start, r.end]);
  });

  it('declines bodies that are not plain chat requests', () => {
    for (const text of ['{"messages":[]}', '{"messages":[{"role":1}]}', '{"prompt":"x"}', 'nope']) {
      expect(template.renderBody(enc(text)), text).toBeUndefined();
      expect(template.encodeBody(bytes, enc(text)), text).toBeUndefined();
    }
  });

  it('hands over renders larger than the scratch of ids', () => {
    const content = 'x'.repeat(100_000);
    const t = template.encodeBody(bytes, enc(JSON.stringify({ messages: [{ role: 'user', content }] })))!;
    expect(t.tokens.length).toBe('<s>user:;'.length + content.length);
  });

  it('throws ChatRenderError when the template refuses, TypeError for what is not a request', () => {
    const strict = new CompiledChatTemplate("{{ raise_exception('nope') }}");
    expect(() => strict.renderBody(enc('{"messages":[{"role":"user"}]}'))).toThrow(ChatRenderError);
    expect(() => strict.encodeBody(bytes, enc('{"messages":[{"role":"user"}]}'))).toThrow(/nope/);
    expect(() => template.render({ messages: [] })).toThrow(TypeError);
    expect(() => template.renderBody('x' as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => new CompiledChatTemplate('{% if %}')).toThrow(/does not compile/);
  });
});
