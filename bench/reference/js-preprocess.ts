// The JavaScript preprocessing kvroute had before its native one: the reference the preprocess
// suite measures against. A request body parsed whole by JSON.parse, messages checked and
// flattened (parseChatMessages), the chat template rendered by @huggingface/jinja, the text
// tokenized by @huggingface/tokenizers, and the engine's prompt written as `[${ids.join(',')}]`.
// test/bench/js-preprocess-reference.test.ts holds it to the native path's ids and engine body.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { parseChatMessages } from '../../src/preprocess/chat-template.js';

export interface JsPreprocessStages {
  parseUs: number;
  templateUs: number;
  tokenizeUs: number;
  /** The engine body written: the prompt's ids as JSON text, the body serialised. */
  engineBodyUs: number;
}

export interface JsPreprocessed {
  tokens: Uint32Array;
  /** The body the engine gets: completions, the prompt as token ids. */
  engineBody: string;
}

export class JsPreprocess {
  private readonly tokenizer: Tokenizer;
  private readonly template: Template;
  private readonly specialTokens: Record<string, string>;

  constructor(modelDir: string, specialTokens: Record<string, string>) {
    const config = JSON.parse(readFileSync(join(modelDir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    this.tokenizer = new Tokenizer(JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8')) as object, config);
    this.template = new Template(config.chat_template as string);
    this.specialTokens = specialTokens;
  }

  /** A completions (text prompt) or chat body to the engine's completions body, each stage timed into `t`. */
  run(chat: boolean, body: Uint8Array, t: JsPreprocessStages): JsPreprocessed {
    let at = performance.now();
    const json = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as Record<string, unknown>;
    const messages = chat ? parseChatMessages(json.messages) : undefined;
    t.parseUs = lap();
    const text = messages
      ? this.template.render({ messages, add_generation_prompt: json.add_generation_prompt !== false, ...this.specialTokens })
      : (json.prompt as string);
    t.templateUs = chat ? lap() : 0;
    const tokens = Uint32Array.from(this.tokenizer.encode(text, { add_special_tokens: false }).ids);
    t.tokenizeUs = lap();
    const forEngine: Record<string, unknown> = {};
    for (const key of Object.keys(json)) if (key !== 'messages' && key !== 'prompt') forEngine[key] = json[key];
    const prompt = `[${tokens.join(',')}]`;
    const engineBody = `${JSON.stringify(forEngine).slice(0, -1)},"prompt":${prompt}}`;
    t.engineBodyUs = lap();
    return { tokens, engineBody };

    function lap(): number {
      const now = performance.now();
      const us = (now - at) * 1000;
      at = now;
      return us;
    }
  }
}
