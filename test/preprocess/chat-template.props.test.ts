// Chat templates rendered natively against HuggingFace's JavaScript Jinja (@huggingface/jinja, the
// renderer kvroute used before) on random conversations: any roles in any order, unicode and
// template-like text in contents, names, tool calls with JSON-text arguments, tools. And the two
// ways in agree: messages parsed in JavaScript, and the request body read natively.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseChatMessages } from '../../src/preprocess/chat-template.js';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { QWEN, TINY_BPE, TINY_MODEL } from './tokenizer-fixtures.js';

const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('', ' ', '\n', '{{ x }}', '{% if %}', '<|im_end|>', '"quoted" \\ back', 'é東京🙂', '  padded  '),
);
const toolCall = fc.record({
  id: fc.string({ minLength: 1, maxLength: 8 }),
  type: fc.constant('function'),
  function: fc.record({
    name: fc.constantFrom('get_weather', 'add', 'search'),
    arguments: fc
      .dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()), { maxKeys: 3 })
      .map((a) => JSON.stringify(a)),
  }),
});
const message = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: text }),
  fc.record({ role: fc.constant('user'), content: text, name: fc.string({ minLength: 1, maxLength: 8 }) }),
  fc.record({ role: fc.constant('assistant'), content: fc.oneof(text, fc.constant(null)), tool_calls: fc.array(toolCall, { minLength: 1, maxLength: 3 }) }),
  fc.record({ role: fc.constant('tool'), tool_call_id: fc.string({ minLength: 1, maxLength: 8 }), content: text }),
);
const tool = fc.record({
  type: fc.constant('function'),
  function: fc.record({
    name: fc.constantFrom('get_weather', 'add', 'search'),
    description: text,
    parameters: fc.constant({ type: 'object', properties: { q: { type: 'string', description: 'what' } }, required: ['q'] }),
  }),
});
const conversation = fc.record({
  messages: fc.array(message, { minLength: 1, maxLength: 8 }),
  tools: fc.option(fc.array(tool, { minLength: 1, maxLength: 3 }), { nil: undefined }),
  addGenerationPrompt: fc.boolean(),
});

const models: [string, string | undefined][] = [
  ['tiny-model', TINY_MODEL],
  ['tiny-bpe', TINY_BPE],
  ['qwen2_5', QWEN],
];

for (const [name, dir] of models) {
  describe.skipIf(dir === undefined)(`native chat template = @huggingface/jinja: ${name}`, () => {
    it('renders random conversations as the JavaScript Jinja does, from messages and from request bytes', async () => {
      const tok = await loadHfTokenizer(dir!);
      const config = JSON.parse(readFileSync(join(dir!, 'tokenizer_config.json'), 'utf8')) as { chat_template: string };
      const js = new Template(config.chat_template);
      fc.assert(
        fc.property(conversation, ({ messages, tools, addGenerationPrompt }) => {
          const parsed = parseChatMessages(messages);
          let want: string | undefined;
          try {
            want = js.render({ messages: parsed, tools: tools ?? null, add_generation_prompt: addGenerationPrompt, ...tok.specialTokens });
          } catch {
            want = undefined; // the template refuses this conversation (tiny-bpe: unknown roles)
          }
          const fromMessages = () => tok.chatTemplate!.render(parsed, addGenerationPrompt, { tools });
          const body = Buffer.from(JSON.stringify({ messages, tools, add_generation_prompt: addGenerationPrompt }));
          const fromBody = () => tok.chatTemplate!.compiled.renderBody(body)!.text;
          if (want === undefined) {
            expect(fromMessages).toThrow();
            expect(fromBody).toThrow();
            return;
          }
          expect(fromMessages()).toBe(want);
          expect(fromBody()).toBe(want);
        }),
        { numRuns: 300 },
      );
    });
  });
}
