// A HuggingFace tokenizer (tokenizer.json + tokenizer_config.json): encoded and decoded natively by
// the `tokenizers` crate (src/core/tokenizer.ts), with the model's chat template from
// tokenizer_config.json.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NativeHfTokenizer } from '../core/tokenizer.js';
import { describe } from '../util/validate.js';
import { ChatTemplate } from './chat-template.js';
import type { TextTokenizer } from './types.js';

export interface HfTokenizerFiles {
  /** tokenizer.json: its bytes or text, its parsed contents, or an already loaded one. */
  tokenizer: Uint8Array | string | object | NativeHfTokenizer;
  /** Parsed tokenizer_config.json (chat_template, bos_token, eos_token, ...). */
  config?: Record<string, unknown>;
}

export class HfTokenizer implements TextTokenizer {
  readonly name: string;
  readonly chatTemplate?: ChatTemplate;
  private readonly inner: NativeHfTokenizer;

  /** Reads tokenizer.json on this thread; loadHfTokenizer reads it on another. */
  constructor(files: HfTokenizerFiles, name = 'hf') {
    const t: unknown = files?.tokenizer;
    if (t instanceof NativeHfTokenizer) this.inner = t;
    else if (t instanceof Uint8Array) this.inner = NativeHfTokenizer.fromJson(t);
    else if (typeof t === 'string') this.inner = NativeHfTokenizer.fromJson(Buffer.from(t));
    else if (typeof t === 'object' && t !== null && !Array.isArray(t)) this.inner = NativeHfTokenizer.fromJson(Buffer.from(JSON.stringify(t)));
    else throw new TypeError(`tokenizer must be the contents of a tokenizer.json, got ${describe(t)}`);
    const config = files.config ?? {};
    this.name = name;
    if (typeof config.chat_template === 'string') {
      this.chatTemplate = new ChatTemplate(config.chat_template, {
        bos_token: tokenString(config.bos_token),
        eos_token: tokenString(config.eos_token),
      });
    }
  }

  /** Special tokens written in the text become their ids; none are added (the chat template writes them). */
  encode(text: string): Uint32Array {
    return this.inner.encode(text);
  }

  decode(ids: ArrayLike<number>): string {
    return this.inner.decode(ids, true);
  }
}

/**
 * Loads tokenizer.json and, when present, tokenizer_config.json from a model directory; the
 * vocabulary is built off the event loop.
 */
export async function loadHfTokenizer(dir: string): Promise<HfTokenizer> {
  let tokenizer: NativeHfTokenizer;
  try {
    tokenizer = await NativeHfTokenizer.load(await readFile(join(dir, 'tokenizer.json')));
  } catch (err) {
    throw new Error(`cannot load the tokenizer of ${dir}: ${(err as Error).message}`);
  }
  let config: Record<string, unknown> | undefined;
  try {
    config = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot load the tokenizer of ${dir}: tokenizer_config.json: ${(err as Error).message}`);
  }
  return new HfTokenizer({ tokenizer, config }, dir);
}

// tokenizer_config.json writes special tokens either as strings or as AddedToken objects.
function tokenString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return '';
}
