// English-like prompt text for the text-prompt figures: sentences of common words with
// punctuation, numbers, code-ish identifiers and paragraph breaks, from a seeded generator, so every
// run tokenizes the same text. Sized in tokens of the tokenizer that will read it.

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but ' +
  'have an they you were her she there been one all we their has would when if so no will more ' +
  'can out other into some could them than then its time only new about these two may first any ' +
  'like our over such after most also made many before must through back years where much your ' +
  'way well down should because each just those people how too little state good very make world ' +
  'still own see men work long get here between both life being under never day same another know ' +
  'while last might us great old year off come since against go came right used take three router ' +
  'cache token block worker request latency prefix engine memory model prompt decode prefill ' +
  'throughput scheduler kernel attention sequence batch stream session index radix hash event'
).split(' ');

/** xorshift32: deterministic per seed. */
function rng(seed: number): () => number {
  let x = (seed * 2_654_435_761) >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

function sentence(next: () => number): string {
  const n = 6 + Math.floor(next() * 14);
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = next();
    if (r < 0.03) words.push(String(Math.floor(next() * 10_000)));
    else if (r < 0.05) words.push(`${WORDS[Math.floor(next() * WORDS.length)]}_${WORDS[Math.floor(next() * WORDS.length)]}()`);
    else words.push(WORDS[Math.floor(next() * WORDS.length)]);
  }
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  const end = next() < 0.8 ? '.' : next() < 0.5 ? '?' : '!';
  return words.join(next() < 0.1 ? ', ' : ' ') + end;
}

/**
 * Text of at least `tokens` tokens by `countTokens` (and close to it: sentences are added until the
 * count is reached), the same for the same seed.
 */
export function promptText(tokens: number, countTokens: (text: string) => number, seed = 1): string {
  const next = rng(seed);
  const parts: string[] = [];
  // Grow by an estimate, then by single sentences, so the tokenizer runs a few times, not per sentence.
  let text = '';
  while (countTokens(text) < tokens) {
    const missing = tokens - countTokens(text);
    const sentences = Math.max(1, Math.floor(missing / 20));
    for (let i = 0; i < sentences; i++) parts.push(sentence(next) + (next() < 0.15 ? '\n\n' : ' '));
    text = parts.join('');
  }
  return text.trimEnd();
}
