// The native tokenizer (the `tokenizers` crate) against HuggingFace's JavaScript one
// (@huggingface/tokenizers) on random texts: unicode of every plane, lone surrogates, whitespace
// runs, CRLF, combining marks (NFC), special and added tokens, and long texts. Same ids, or the
// router's blocks would not hash like the engine's. The JavaScript tokenizer departs from
// HuggingFace's own (Python, Rust) on WordLevel models: unknown words get no id (null) and its
// Whitespace pre-tokenizer's \w is ASCII only; the WordLevel fixture is therefore compared on
// texts of its vocabulary here, and on every kind of text against ids from HuggingFace's Python
// tokenizers in hf-tokenizer.golden.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as JsTokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { QWEN, TINY_BPE, TINY_MODEL } from './tokenizer-fixtures.js';

const PIECES = [
  'hello',
  ' world',
  'world',
  'user',
  '\n',
  '\n\n',
  '\t',
  '  ',
  '   \n',
  '\r\n',
  ' \r\n ',
  '\u00a0',
  '\u2028',
  '\ufeff',
  '\u200b',
  '\u3000',
  '<|im_start|>',
  '<|im_end|>',
  '<|endoftext|>',
  '<tool_call>',
  '</tool_call>',
  '<|im_start',
  'im_end|>',
  "I'm",
  "'S",
  "'ll",
  "DON'T",
  '123456789',
  '3.14',
  '-0',
  '1e9',
  '0x1F',
  '==>',
  '...',
  '!!!',
  '{"a": [1, 2]}',
  'é',
  'e\u0301',
  'A\u030a',
  '\u212b',
  'ﬁ',
  'Straße',
  '東京',
  '你好，世界',
  '🙂',
  '👍🏽',
  '👨‍👩‍👧',
  '\ud800',
  '\udfff',
  'x'.repeat(300),
];

const anyText = (pieces: readonly string[]) =>
  fc
    .array(
      fc.oneof(
        fc.constantFrom(...pieces),
        fc.string({ unit: 'grapheme', maxLength: 12 }),
        fc.string({ unit: 'binary', maxLength: 12 }),
        fc.string({ maxLength: 20 }),
      ),
      { maxLength: 40 },
    )
    .map((parts) => parts.join(''));

/** A long text: many sentences of words, numbers and symbols, a few paragraphs. */
const longText = (words: readonly string[]) =>
  fc
    .array(fc.tuple(fc.array(fc.constantFrom(...words), { minLength: 3, maxLength: 15 }), fc.constantFrom('. ', '? ', '.\n\n', '!\n')), {
      minLength: 200,
      maxLength: 600,
    })
    .map((sentences) => sentences.map(([w, end]) => w.join(' ') + end).join(''));

// The WordLevel fixture's words, specials and the whitespace its pre-tokenizer splits on.
const TINY_WORDS = ['hello', 'world', 'user', 'assistant', '<|im_start|>', '<|im_end|>', '<unk>'];
const tinyText = fc
  .array(fc.oneof(fc.constantFrom(...TINY_WORDS), fc.constantFrom(' ', '\n', '\t', '  ', '\r\n', '\n\n')), { maxLength: 60 })
  .map((p) => p.join(''));

function bothTokenizers(dir: string) {
  const json = readFileSync(join(dir, 'tokenizer.json'));
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  const js = new JsTokenizer(JSON.parse(json.toString('utf8')) as object, config);
  return {
    native: new HfTokenizer({ tokenizer: json, config }),
    js: (t: string) => js.encode(t, { add_special_tokens: false }).ids,
    // HuggingFace's tokenizers decode without transformers' clean-up of spaces before punctuation.
    jsDecode: (ids: number[]) => (ids.length === 0 ? '' : js.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false })),
  };
}

const models: [string, string | undefined, fc.Arbitrary<string>, fc.Arbitrary<string>][] = [
  ['tiny-model (WordLevel)', TINY_MODEL, tinyText, longText(TINY_WORDS)],
  ['tiny-bpe (byte-level BPE)', TINY_BPE, anyText(PIECES), longText(PIECES.slice(0, 40))],
  ['Qwen2.5 (bench/.cache)', QWEN, anyText(PIECES), longText(PIECES.slice(0, 40))],
];

for (const [name, dir, text, longText] of models) {
  describe.skipIf(dir === undefined)(`native tokenizer = @huggingface/tokenizers: ${name}`, () => {
    const t = dir === undefined ? undefined : bothTokenizers(dir);

    it('gives the same ids on random texts', () => {
      fc.assert(
        fc.property(text, (s) => {
          expect(Array.from(t!.native.encode(s))).toEqual(t!.js(s));
        }),
        { numRuns: 600 },
      );
    });

    it('gives the same ids on long texts', () => {
      fc.assert(
        fc.property(longText, (s) => {
          expect(Array.from(t!.native.encode(s))).toEqual(t!.js(s));
        }),
        { numRuns: 15 },
      );
    });

    it('decodes the ids of a text to what the JavaScript tokenizer decodes', () => {
      fc.assert(
        fc.property(text, (s) => {
          const ids = t!.native.encode(s);
          expect(t!.native.decode(ids)).toBe(t!.jsDecode(Array.from(ids)));
        }),
        { numRuns: 300 },
      );
    });
  });
}
