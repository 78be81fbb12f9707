// 1k-token prompts for the router comparison, as text and as the token ids of that same text
// (Qwen2.5's real tokenizer, bench/lib/real-tokenizer.ts): each opens with one of a few shared
// 512-token "system" passages and goes on with a passage of its own, so that a cache-aware
// router sees shared prefixes and distinct tails, as in a chat service.
import { loadHfTokenizer } from '../../../src/preprocess/hf-tokenizer.js';

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there ' +
  'one all we their been has when who will more no if out so said what up its about into than them can only other new some could time ' +
  'these two may then do first any my now such like our over man me even most made after also did many before must through back years ' +
  'where much your way well down should because each just those people how too little state good very make world still own see men work ' +
  'long get here between both life being under never day same another know while last might us great old year off come since against go ' +
  'came right used take three router cache block token worker prefix engine request latency memory index'
).split(' ');

export interface PromptSet {
  text: string[];
  /** The token ids of each text, as kvroute's tokenizer produces them. */
  ids: Uint32Array[];
  meanTokens: number;
}

function words(seed: number, count: number): string {
  let x = (seed * 2_654_435_761) >>> 0 || 1;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.push(WORDS[(x >>> 0) % WORDS.length]);
  }
  return `${out.join(' ')}.`;
}

/** `count` prompts of about `tokens` tokens, `systems` shared halves among them. */
export async function buildPrompts(tokenizerDir: string, count: number, tokens = 1024, systems = 8): Promise<PromptSet> {
  const tok = await loadHfTokenizer(tokenizerDir);
  const cut = (text: string, n: number) => tok.decode(tok.encode(text).subarray(0, n));
  // Plenty of words (about 1.2 tokens per word here), cut at a token boundary.
  const shared = Array.from({ length: systems }, (_, s) => cut(words(1_000 + s, tokens), tokens / 2));
  const text = Array.from({ length: count }, (_, i) => cut(`${shared[i % systems]} ${words(50_000 + i, tokens)}`, tokens));
  const ids = text.map((t) => tok.encode(t));
  return { text, ids, meanTokens: ids.reduce((n, x) => n + x.length, 0) / ids.length };
}

/** A streamed /v1/completions body, as the frontend suite sends them. */
export function completionBody(model: string, prompt: string | Uint32Array, maxTokens: number): string {
  return JSON.stringify({
    model,
    prompt: typeof prompt === 'string' ? prompt : Array.from(prompt),
    max_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  });
}
