// A HuggingFace tokenizer (tokenizer.json + tokenizer_config.json) through @huggingface/tokenizers,
// with the model's chat template from tokenizer_config.json.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { ChatTemplate } from './chat-template.js';
import type { TextTokenizer } from './types.js';

export interface HfTokenizerFiles {
  /** Parsed tokenizer.json. */
  tokenizer: object;
  /** Parsed tokenizer_config.json (chat_template, bos_token, eos_token, ...). */
  config?: Record<string, unknown>;
}

export class HfTokenizer implements TextTokenizer {
  readonly name: string;
  readonly chatTemplate?: ChatTemplate;
  private readonly inner: Tokenizer;

  constructor(files: HfTokenizerFiles, name = 'hf') {
    if (typeof files?.tokenizer !== 'object' || files.tokenizer === null) {
      throw new TypeError('tokenizer must be the parsed contents of a tokenizer.json');
    }
    const config = files.config ?? {};
    this.inner = new Tokenizer(files.tokenizer, config);
    this.name = name;
    if (typeof config.chat_template === 'string') {
      this.chatTemplate = new ChatTemplate(config.chat_template, {
        bos_token: tokenString(config.bos_token),
        eos_token: tokenString(config.eos_token),
      });
    }
  }

  encode(text: string): Uint32Array {
    // Special tokens come from the chat template's text itself, so none are added here.
    return Uint32Array.from(this.inner.encode(text, { add_special_tokens: false }).ids);
  }

  decode(ids: ArrayLike<number>): string {
    return this.inner.decode(Array.from(ids), { skip_special_tokens: true });
  }
}

/** Loads tokenizer.json and, when present, tokenizer_config.json from a model directory. */
export async function loadHfTokenizer(dir: string): Promise<HfTokenizer> {
  let tokenizer: object;
  try {
    tokenizer = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8')) as object;
  } catch (err) {
    throw new Error(`cannot load the tokenizer of ${dir}: ${(err as Error).message}`);
  }
  let config: Record<string, unknown> | undefined;
  try {
    config = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
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
