// Deterministic per-token randomness: every generated token id and every end-of-sequence draw is
// a hash of (seed, request id, output index), so outputs do not depend on scheduling order,
// batching or preemption, and the same seed replays the same text.

/** murmur3's 32-bit finaliser: a bijective avalanche mix. */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** FNV-1a over UTF-16 code units, then mixed: a 32-bit key for a string. */
export function hashString32(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h ^ s.length);
}

/** Folds any safe integer seed into 32 bits. */
export function seed32(seed: number): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 0x1_0000_0000) >>> 0;
  return mix32(lo ^ mix32(hi + 0x9e3779b9));
}

/** Printable ASCII (32..126): a byte tokenizer decodes the output to readable text. */
export const FIRST_TOKEN_ID = 32;
export const TOKEN_ID_RANGE = 95;

export class TokenSampler {
  private readonly seed: number;

  constructor(seed: number) {
    this.seed = seed32(seed);
  }

  /** A request's stream key (computed once per request). */
  streamKey(requestId: string): number {
    return hashString32(requestId, this.seed);
  }

  tokenId(streamKey: number, index: number): number {
    return FIRST_TOKEN_ID + (mix32(streamKey ^ mix32(index + 0x632be5ab)) % TOKEN_ID_RANGE);
  }

  /** Uniform in [0, 1), independent of tokenId's draw. */
  eosDraw(streamKey: number, index: number): number {
    return mix32(mix32(streamKey ^ 0x5bd1e995) ^ mix32(index + 0x27d4eb2f)) / 0x1_0000_0000;
  }
}
