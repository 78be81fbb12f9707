// A HuggingFace tokenizer (tokenizer.json + tokenizer_config.json): encoded and decoded natively by
// the `tokenizers` crate (src/core/tokenizer.ts), with the model's chat template from
// tokenizer_config.json.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NativeTextTokenizer } from '../core/tokenizer.js';
import { describe } from '../util/validate.js';
import { ChatTemplate } from './chat-template.js';
import type { TextTokenizer } from './types.js';

export interface HfTokenizerFiles {
  /** tokenizer.json: its bytes or text, its parsed contents, or an already loaded one. */
  tokenizer: Uint8Array | string | object | NativeTextTokenizer;
  /** Parsed tokenizer_config.json (chat_template, bos_token, eos_token, ...). */
  config?: Record<string, unknown>;
}

/** The special tokens apply_chat_template gives every template (transformers' special_tokens_map). */
const SPECIAL_TOKEN_NAMES = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];

export class HfTokenizer implements TextTokenizer {
  readonly name: string;
  /** The model's chat template (tokenizer_config.json's chat_template), when it has one. */
  readonly chatTemplate?: ChatTemplate;
  /** The special tokens of tokenizer_config.json that are set, for any template rendered for this model. */
  readonly specialTokens: Record<string, string>;
  readonly native: NativeTextTokenizer;

  /** Reads tokenizer.json on this thread; loadHfTokenizer reads it on another. */
  constructor(files: HfTokenizerFiles, name = 'hf') {
    const t: unknown = files?.tokenizer;
    if (t instanceof NativeTextTokenizer) this.native = t;
    else if (t instanceof Uint8Array) this.native = NativeTextTokenizer.fromJson(t);
    else if (typeof t === 'string') this.native = NativeTextTokenizer.fromJson(Buffer.from(t));
    else if (typeof t === 'object' && t !== null && !Array.isArray(t)) this.native = NativeTextTokenizer.fromJson(Buffer.from(JSON.stringify(t)));
    else throw new TypeError(`tokenizer must be the contents of a tokenizer.json, got ${describe(t)}`);
    const config = files.config ?? {};
    this.name = name;
    this.specialTokens = {};
    for (const key of SPECIAL_TOKEN_NAMES) {
      const token = tokenString(config[key]);
      if (token !== undefined) this.specialTokens[key] = token;
    }
    // A list of templates by name (newer configs) keeps its default as the chat template.
    const source = typeof config.chat_template === 'string' ? config.chat_template : namedTemplate(config.chat_template, 'default');
    if (source !== undefined) this.chatTemplate = new ChatTemplate(source, this.specialTokens);
  }

  /** Special tokens written in the text become their ids; none are added (the chat template writes them). */
  encode(text: string): Uint32Array {
    return this.native.encode(text);
  }

  decode(ids: ArrayLike<number>): string {
    return this.native.decode(ids, true);
  }
}

/**
 * Loads tokenizer.json and, when present, tokenizer_config.json from a model directory; the
 * vocabulary is built off the event loop.
 */
export async function loadHfTokenizer(dir: string): Promise<HfTokenizer> {
  let tokenizer: NativeTextTokenizer;
  try {
    tokenizer = await NativeTextTokenizer.load(await readFile(join(dir, 'tokenizer.json')));
  } catch (err) {
    throw new Error(`cannot load the tokenizer of ${dir}: ${(err as Error).message}`);
  }
  let config: Record<string, unknown> | undefined;
  try {
    config = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`cannot load the tokenizer of ${dir}: tokenizer_config.json: ${(err as Error).message}`);
  }
  return new HfTokenizer({ tokenizer, config }, dir);
}

// tokenizer_config.json writes special tokens either as strings or as AddedToken objects.
function tokenString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return undefined;
}

/** `[{name, template}, ...]`: the template called `name`. */
function namedTemplate(value: unknown, name: string): string | undefined {
  if (!Array.isArray(value)) return undefined;
  const found = value.find((t: unknown) => (t as { name?: unknown })?.name === name) as { template?: unknown } | undefined;
  return typeof found?.template === 'string' ? found.template : undefined;
}
