// The router's tokenizer and chat template: the ones a library user passes, else the configured
// tokenizer (the byte tokenizer, or a HuggingFace directory with its own template), a configured
// template over the model's, and ChatML when there is none. Each is loaded only when needed.
import { CHATML_TEMPLATE, ChatTemplate } from '../../preprocess/chat-template.js';
import type { TextTokenizer } from '../../preprocess/types.js';
import type { RouterConfig } from '../config/config.js';

/** What `createRouter`'s options may already hold. */
export interface PreprocessingGiven {
  tokenizer?: TextTokenizer;
  chatTemplate?: ChatTemplate;
}

export async function loadPreprocessing(config: RouterConfig, opts: PreprocessingGiven): Promise<{ tokenizer: TextTokenizer; chatTemplate: ChatTemplate }> {
  let tokenizer = opts.tokenizer;
  let specialTokens: Record<string, string> = {};
  let modelTemplate: ChatTemplate | undefined;
  if (!tokenizer) {
    if (config.tokenizer.type === 'byte') {
      tokenizer = (await import('../../preprocess/byte-tokenizer.js')).byteTokenizer;
    } else {
      const hf = await (await import('../../preprocess/hf-tokenizer.js')).loadHfTokenizer(config.tokenizer.path);
      tokenizer = hf;
      specialTokens = hf.specialTokens;
      modelTemplate = hf.chatTemplate;
    }
  }
  // A configured template overrides the model's, with the model's special tokens.
  const configured = config.chatTemplate ? new ChatTemplate(config.chatTemplate, specialTokens) : undefined;
  return { tokenizer, chatTemplate: opts.chatTemplate ?? configured ?? modelTemplate ?? new ChatTemplate(CHATML_TEMPLATE) };
}
