// The SMG comparison's workload, shared by its suite (suites/smg-frontend.ts) and the scripts that
// study one part of it (router-flags-series.ts, stage-probe.ts, router-drift.ts): the model name,
// the prompts' and answers' sizes, the engines, and for a script the whole set-up, the package
// compiled first (the kvroute router process runs dist/, which must be the code under test).
import { loadavg } from 'node:os';
import { startWorld, type World } from '../../frontend/world-process.js';
import { compilePackage } from '../../lib/compiled.js';
import { realTokenizerDir } from '../../lib/real-tokenizer.js';
import { buildPrompts, completionBody } from './prompts.js';

export const MODEL = 'bench';
export const OUTPUT_TOKENS = 4;
export const PROMPT_TOKENS = 1024;
export const ENGINES = 2;
/** Distinct prompts of a full run (and of every script). */
export const PROMPTS = 256;

export interface ScriptWorkload {
  tokenizerDir: string;
  /** Streamed /v1/completions bodies of the same prompts, as text and as token ids. */
  bodies: { text: string[]; ids: string[] };
  world: World;
}

/** Compiles the package, builds the suite's request bodies and starts its world of engines. */
export async function startScriptWorkload(log: (line: string) => void): Promise<ScriptWorkload> {
  await compilePackage(log);
  const tokenizerDir = realTokenizerDir();
  const prompts = await buildPrompts(tokenizerDir, PROMPTS, PROMPT_TOKENS);
  const bodies = {
    text: prompts.text.map((p) => completionBody(MODEL, p, OUTPUT_TOKENS)),
    ids: prompts.ids.map((p) => completionBody(MODEL, p, OUTPUT_TOKENS)),
  };
  const world = await startWorld(OUTPUT_TOKENS, 64, ENGINES);
  return { tokenizerDir, bodies, world };
}

/** Prints a line stamped with the UTC time and the load average (the scripts' figures need both). */
export function stampedLog(line: string): void {
  console.log(
    `${new Date().toISOString().slice(11, 19)} load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} | ${line}`,
  );
}
