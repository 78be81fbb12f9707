// The preprocess suite's JavaScript reference computes what the router's native path computes:
// the same prompt ids and the same engine body, for text prompts and chat requests.
import { describe, expect, it } from 'vitest';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { stringifyBody } from '../../src/engines/json.js';
import { parseRequestBody, prepareRequest, type Preprocessor } from '../../src/server/openai/request.js';
import { benchRequest, MODEL } from '../../bench/preprocess/requests.js';
import { JsPreprocess } from '../../bench/reference/js-preprocess.js';
import { QWEN, TINY_BPE } from '../preprocess/tokenizer-fixtures.js';

for (const [name, dir] of [
  ['tiny-bpe', TINY_BPE],
  ['Qwen2.5 (bench/.cache)', QWEN],
] as const) {
  describe.skipIf(dir === undefined)(`JsPreprocess = the native path: ${name}`, () => {
    it('gives the same ids and engine body for text and chat requests', async () => {
      const hf = await loadHfTokenizer(dir!);
      const pre: Preprocessor = { tokenizer: hf, chatTemplate: hf.chatTemplate!, models: [MODEL] };
      const js = new JsPreprocess(dir!, hf.specialTokens);
      for (const kind of ['text', 'chat'] as const) {
        const req = benchRequest(kind, 300, (t) => hf.encode(t).length);
        const route = kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
        const parsed = parseRequestBody(route, req.body, pre);
        expect(parsed.scanned?.kind).toBe(kind);
        const native = prepareRequest(route, parsed.json, {}, pre, parsed.scanned);
        const ref = js.run(kind === 'chat', req.body, { parseUs: 0, templateUs: 0, tokenizeUs: 0, engineBodyUs: 0 });
        expect(Array.from(ref.tokens)).toEqual(Array.from(native.tokens));
        expect(JSON.parse(ref.engineBody)).toEqual(JSON.parse(stringifyBody(native.body)));
      }
    });
  });
}
