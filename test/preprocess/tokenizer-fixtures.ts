// Model directories the tokenizer and chat-template tests read: two small real ones committed in
// test/fixtures, and Qwen2.5's (the benchmarks' real tokenizer) and Llama 2's when a benchmark run
// or scripts/fetch-tokenizers.ts (CI runs it) has fetched them into bench/.cache (tests never
// download them; theirs are skipped without them, except under CI, where they fail).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A WordLevel tokenizer with a whitespace pre-tokenizer and a ChatML template (8 tokens). */
export const TINY_MODEL = fileURLToPath(new URL('../fixtures/tiny-model', import.meta.url));
/** A byte-level BPE (700 tokens) trained by HuggingFace's tokenizers, NFC, a GPT-4-style split regex, ChatML specials; a template with tools (make.py). */
export const TINY_BPE = fileURLToPath(new URL('../fixtures/tiny-bpe', import.meta.url));

function fetched(folder: string): string | undefined {
  const dir = fileURLToPath(new URL(`../../bench/.cache/${folder}`, import.meta.url));
  return existsSync(join(dir, 'tokenizer.json')) && existsSync(join(dir, 'tokenizer_config.json')) ? dir : undefined;
}

/** Qwen2.5's model directory, or undefined when no benchmark run fetched it. */
export const QWEN = fetched('qwen2_5-tokenizer');
/** Llama 2's (SentencePiece BPE with byte fallback, no chat template in its config), or undefined. */
export const LLAMA2 = fetched('llama2-tokenizer');
