// Chat templates rendered natively against HuggingFace transformers' apply_chat_template
// (test/fixtures/golden/make.py wrote the renders): plain turns, content parts, unicode,
// tools, tool-call turns (arguments as JSON text and as objects, floats, key order), consecutive
// tool results, and a conversation the template refuses. Both ways in: messages parsed in
// JavaScript, and a request body read natively (rendered, and rendered and tokenized).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ChatRenderError } from '../../src/core/chat-template.js';
import { parseChatMessages } from '../../src/preprocess/chat-template.js';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { QWEN, TINY_BPE, TINY_MODEL } from './tokenizer-fixtures.js';

interface Chat {
  messages: unknown[];
  tools?: unknown[];
  add_generation_prompt?: boolean;
  /** Set on a conversation whose numbers JavaScript cannot hold (1.0, 2^53 + 1). */
  note?: string;
}

const GOLDEN = fileURLToPath(new URL('../fixtures/golden/', import.meta.url));
/** One conversation a line, kept as written: a request body is made of its own text. */
const lines = readFileSync(join(GOLDEN, 'chats.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');
const chats = lines.map((l) => JSON.parse(l) as Chat);
const renders = JSON.parse(readFileSync(join(GOLDEN, 'chat-renders.json'), 'utf8')) as Record<string, ({ text: string } | { error: string })[]>;

const models: [string, string | undefined][] = [
  ['tiny-model', TINY_MODEL],
  ['tiny-bpe', TINY_BPE],
  ['qwen2_5', QWEN],
];

for (const [name, dir] of models) {
  describe.skipIf(dir === undefined)(`native chat template = transformers' apply_chat_template: ${name}`, () => {
    it('renders every golden conversation as HuggingFace does, from messages and from request bytes', async () => {
      const tok = await loadHfTokenizer(dir!);
      const template = tok.chatTemplate!;
      expect(renders[name]).toHaveLength(chats.length);
      chats.forEach((chat, i) => {
        const want = renders[name][i];
        const body = Buffer.from(`{"model": "m", "stream": true, ${lines[i].trim().slice(1)}`);
        const fromMessages = () => template.render(parseChatMessages(chat.messages), chat.add_generation_prompt !== false, { tools: chat.tools });
        const fromBody = () => template.compiled.renderBody(body)?.text;
        const encoded = () => template.compiled.encodeBody(tok.native, body)!.tokens;
        if ('error' in want) {
          for (const render of [fromMessages, fromBody, encoded]) expect(render, `chat ${i}`).toThrow(ChatRenderError);
          expect(fromMessages).toThrow(want.error);
          return;
        }
        // Parsed in JavaScript, 1.0 is 1 and 2^53 + 1 is 2^53: Python's numbers come only from the bytes.
        if (chat.note === undefined) expect(fromMessages(), `chat ${i}`).toBe(want.text);
        expect(fromBody(), `chat ${i}`).toBe(want.text);
        expect(Array.from(encoded()), `chat ${i}`).toEqual(Array.from(tok.encode(want.text)));
      });
    });
  });
}
