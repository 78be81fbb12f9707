// The tokenizer prefix cache (native/src/tokenize/prefix_cache.rs) against whole-text tokenization
// on real tokenizers: Qwen2.5's (byte-level BPE, its own chat template), Llama 2's (SentencePiece
// BPE with byte fallback, Meta's chat template) and the byte tokenizer (ChatML). Conversations
// grow, branch, are edited in the middle and share system prompts; every render through a cached
// tokenizer must give exactly the ids of the same text tokenized whole, and the cache must really
// have served prefixes (or the test would prove nothing).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NativeTextTokenizer } from '../../src/core/tokenizer.js';
import { CHATML_TEMPLATE, ChatTemplate } from '../../src/preprocess/chat-template.js';
import { HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import type { ChatMessage } from '../../src/preprocess/types.js';
import { LLAMA2, QWEN } from './tokenizer-fixtures.js';

/** Meta's Llama 2 chat template (meta-llama/Llama-2-7b-chat-hf's tokenizer_config.json). */
const LLAMA2_TEMPLATE =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}" +
  "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}" +
  "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

interface Model {
  name: string;
  dir?: string;
  /** Tokenizer and template, loaded when the model is there. */
  load(): { tokenizer: NativeTextTokenizer; template: ChatTemplate };
}

function hf(dir: string, template?: string) {
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  const t = new HfTokenizer({ tokenizer: readFileSync(join(dir, 'tokenizer.json')), config });
  return { tokenizer: t.native, template: template === undefined ? t.chatTemplate! : new ChatTemplate(template, t.specialTokens) };
}

const MODELS: Model[] = [
  { name: 'Qwen2.5 (byte-level BPE, its chat template)', dir: QWEN, load: () => hf(QWEN!) },
  { name: 'Llama 2 (SentencePiece BPE, byte fallback, its chat template)', dir: LLAMA2, load: () => hf(LLAMA2!, LLAMA2_TEMPLATE) },
  { name: 'byte tokenizer (ChatML)', dir: 'built in', load: () => ({ tokenizer: NativeTextTokenizer.bytes(), template: new ChatTemplate(CHATML_TEMPLATE) }) },
];

// Words and the hard cases: special-token text inside a message, whitespace runs at the edges
// (which the templates strip or keep), CRLF, combining marks, emoji, CJK, lone surrogates.
const PIECES = [
  'hello',
  ' world',
  'the',
  'user',
  '\n',
  '\n\n',
  '\t',
  '  ',
  ' \r\n',
  '\u00a0',
  '\u3000',
  'é',
  'e\u0301',
  '東京',
  '你好，世界',
  '🙂',
  '👨‍👩‍👧',
  '\ud800',
  '<|im_start|>',
  '<|im_end|>',
  '<|endoftext|>',
  '<s>',
  '</s>',
  '[INST]',
  '<<SYS>>',
  '<|im_start',
  "I'm",
  '123456',
  '3.14',
  '{"a": [1]}',
  '...',
  '▁',
  'x'.repeat(50),
];
const words = fc
  .array(
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...PIECES) }, fc.string({ unit: 'grapheme', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 6 })),
    { maxLength: 30 },
  )
  .map((p) => p.join(''));
/** A system prompt long enough (several KB) for the cache to look it up. */
const system = fc
  .tuple(fc.array(fc.constantFrom(...PIECES.slice(0, 20)), { minLength: 8, maxLength: 20 }), fc.integer({ min: 40, max: 90 }), words)
  .map(([w, n, tail]) => `${w.join(' ')}. `.repeat(n) + tail);

/** What happens next to the conversations seen so far. */
type Step =
  | { kind: 'reply'; user: string; assistant: string }
  | { kind: 'edit'; at: number; text: string }
  | { kind: 'branch'; keep: number; user: string }
  | { kind: 'fresh'; user: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('reply' as const), user: words, assistant: words }),
  fc.record({ kind: fc.constant('edit' as const), at: fc.nat(), text: words }),
  fc.record({ kind: fc.constant('branch' as const), keep: fc.nat(), user: words }),
  fc.record({ kind: fc.constant('fresh' as const), user: words }),
);

/** The conversations the steps make, each ending with a user turn (roles alternate, as Llama 2's template requires). */
function conversations(sys: string, first: string, steps: Step[]): ChatMessage[][] {
  let turns: string[] = [first];
  const out = [turns];
  for (const s of steps) {
    if (s.kind === 'reply') turns = [...turns, s.assistant, s.user];
    else if (s.kind === 'edit') turns = turns.map((t, i) => (i === s.at % turns.length ? s.text : t));
    else if (s.kind === 'branch') turns = [...turns.slice(0, 2 * (s.keep % ((turns.length + 1) / 2))), s.user];
    else turns = [s.user];
    out.push(turns);
  }
  return out.map((ts) => [{ role: 'system', content: sys }, ...ts.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content }))]);
}

for (const model of MODELS) {
  describe.skipIf(model.dir === undefined && !process.env.CI)(`prefix cache = whole-text tokenization: ${model.name}`, () => {
    const loaded = model.dir === undefined ? undefined : model.load();

    for (const [budget, label] of [
      [256 << 20, 'a cache that keeps everything'],
      [48 << 10, 'a cache small enough to evict all the time'],
    ] as const) {
      it(`gives the whole text's ids on growing, branched and edited conversations (${label})`, () => {
        expect(loaded, 'this tokenizer must be fetched under CI: npx tsx scripts/fetch-tokenizers.ts').toBeDefined();
        const { tokenizer, template } = loaded!;
        const cached = tokenizer.withPrefixCache(budget);
        fc.assert(
          fc.property(fc.array(system, { minLength: 1, maxLength: 2 }), words, fc.array(step, { maxLength: 8 }), (systems, first, steps) => {
            for (const [i, messages] of conversations(systems[0], first, steps).entries()) {
              // Every other conversation on a second system prompt: the cache holds several roots.
              if (systems.length > 1 && i % 2 === 1) messages[0] = { role: 'system', content: systems[1] };
              const text = template.render(messages);
              expect(Array.from(cached.encode(text))).toEqual(Array.from(tokenizer.encode(text)));
            }
          }),
          { numRuns: 40 },
        );
        const stats = cached.prefixCacheStats()!;
        expect(stats.hits).toBeGreaterThan(0);
        expect(stats.reusedTokens).toBeGreaterThan(0);
        expect(stats.bytes).toBeLessThanOrEqual(budget);
        if (budget < 1 << 20) expect(stats.evictions).toBeGreaterThan(0);
      });
    }

    it('gives the same ids through the request readers, inline and off the event loop', async () => {
      expect(loaded, 'this tokenizer must be fetched under CI: npx tsx scripts/fetch-tokenizers.ts').toBeDefined();
      const { tokenizer, template } = loaded!;
      const cached = tokenizer.withPrefixCache(64 << 20);
      const sys = 'Answer in full sentences. '.repeat(300);
      // A first exchange shared too: Llama 2's template writes the system prompt inside the first
      // user turn, so its first cut is the second turn's <s>.
      for (const user of ['first question', 'second question', 'a third one <|im_end|> with a special token']) {
        const messages = [
          { role: 'system', content: sys },
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'How can I help?' },
          { role: 'user', content: user },
        ];
        const body = Buffer.from(JSON.stringify({ model: 'm', messages }));
        const whole = Array.from(tokenizer.encode(template.render(messages)));
        expect(Array.from(template.compiled.encodeBody(cached, body)!.tokens)).toEqual(whole);
        expect(Array.from((await template.compiled.encodeBodyAsync(cached, body))!.tokens)).toEqual(whole);
        const prompt = Buffer.from(JSON.stringify({ model: 'm', prompt: template.render(messages) }));
        expect(Array.from((await cached.encodePromptBodyAsync(prompt))!.tokens)).toEqual(whole);
      }
      expect(cached.prefixCacheStats()!.hits).toBeGreaterThan(0);
    });
  });
}

describe('withPrefixCache', () => {
  it('refuses a budget that is not a byte count, and 0 makes a tokenizer without a cache', () => {
    const bytes = NativeTextTokenizer.bytes();
    for (const bad of [-1, 1.5, Number.NaN, '1' as unknown as number]) expect(() => bytes.withPrefixCache(bad)).toThrow(RangeError);
    expect(bytes.withPrefixCache(0).prefixCacheStats()).toBeUndefined();
    expect(bytes.prefixCacheStats()).toBeUndefined();
  });
});
