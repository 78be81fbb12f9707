// The native tokenizer against ids written by HuggingFace's Python tokenizers for the texts of
// test/fixtures/golden (test/fixtures/golden/make.py wrote them): WordLevel unknown words, unicode
// word characters, NFC, specials, added tokens, whitespace runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { QWEN, TINY_BPE, TINY_MODEL } from './tokenizer-fixtures.js';

const GOLDEN = fileURLToPath(new URL('../fixtures/golden/', import.meta.url));
const texts = JSON.parse(readFileSync(join(GOLDEN, 'texts.json'), 'utf8')) as string[];
const golden = JSON.parse(readFileSync(join(GOLDEN, 'tokenizer-ids.json'), 'utf8')) as Record<string, { ids: number[]; decoded: string }[]>;

const models: [string, string | undefined][] = [
  ['tiny-model', TINY_MODEL],
  ['tiny-bpe', TINY_BPE],
  ['qwen2_5', QWEN],
];

for (const [name, dir] of models) {
  describe.skipIf(dir === undefined)(`native tokenizer = HuggingFace's Python tokenizers: ${name}`, () => {
    it('encodes and decodes every golden text as HuggingFace does', async () => {
      const tok = await loadHfTokenizer(dir!);
      const rows = golden[name];
      expect(rows).toHaveLength(texts.length);
      texts.forEach((text, i) => {
        expect(Array.from(tok.encode(text)), JSON.stringify(text)).toEqual(rows[i].ids);
        expect(tok.decode(rows[i].ids), JSON.stringify(text)).toBe(rows[i].decoded);
      });
    });
  });
}
