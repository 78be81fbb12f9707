// Model directories the tokenizer and chat-template tests read: two small real ones committed in
// test/fixtures, and Qwen2.5's (the benchmarks' real tokenizer) when a benchmark run has fetched it
// into bench/.cache (tests never download it; theirs are skipped without it).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A WordLevel tokenizer with a whitespace pre-tokenizer and a ChatML template (8 tokens). */
export const TINY_MODEL = fileURLToPath(new URL('../fixtures/tiny-model', import.meta.url));
/** A byte-level BPE (700 tokens) trained by HuggingFace's tokenizers, NFC, a GPT-4-style split regex, ChatML specials; a template with tools (make.py). */
export const TINY_BPE = fileURLToPath(new URL('../fixtures/tiny-bpe', import.meta.url));

const QWEN_DIR = fileURLToPath(new URL('../../bench/.cache/qwen2_5-tokenizer', import.meta.url));
/** Qwen2.5's model directory, or undefined when no benchmark run fetched it. */
export const QWEN = existsSync(join(QWEN_DIR, 'tokenizer.json')) && existsSync(join(QWEN_DIR, 'tokenizer_config.json')) ? QWEN_DIR : undefined;
