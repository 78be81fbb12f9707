// Deterministic prompts for trace replay: each hash id stands for TRACE_BLOCK_TOKENS fixed
// pseudo-random token ids derived from the id (the last block cut to the remaining length), so
// equal ids give equal token prefixes at any router block size that divides 512.
import { TRACE_BLOCK_TOKENS, type TraceRequest } from './trace.js';

/** Token ids stay below a typical vocabulary size. */
const VOCAB = 32_000;

/** A 32-bit integer finaliser (lowbias32): fast in JS and plenty for synthetic token ids. */
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * x % VOCAB for a uint32 x in int32 arithmetic: x = hi * 2^16 + lo, and 2^16 % VOCAB = 1536, so
 * x % VOCAB = (hi * 1536 + lo) % VOCAB, whose operand stays below 2^27. (A uint32 above 2^31 is
 * a double to V8, and its % a floating-point remainder: a tenth of a replay's prompt synthesis.)
 */
function modVocab(x: number): number {
  return ((x >>> 16) * (0x1_0000 % VOCAB) + (x & 0xffff)) % VOCAB;
}

/** Writes the tokens of one hash id (its first `count` tokens) into `out` at `offset`. */
export function writeBlockTokens(hashId: number, seed: number, out: Uint32Array, offset: number, count: number): void {
  // Two mixes of (seed, id) give a per-id stream start; ids above 2^32 fold their high half in.
  const hi = Math.floor(hashId / 0x1_0000_0000);
  let state = mix32(mix32((hashId >>> 0) ^ mix32(seed)) ^ hi);
  for (let j = 0; j < count; j++) {
    state = (state + 0x9e3779b9) >>> 0;
    out[offset + j] = modVocab(mix32(state));
  }
}

/** The prompt of one trace request: input_length tokens built from its hash ids. */
export function synthesizePrompt(req: TraceRequest, seed = 0, blockTokens = TRACE_BLOCK_TOKENS): Uint32Array {
  const tokens = new Uint32Array(req.inputLength);
  let offset = 0;
  for (const id of req.hashIds) {
    const count = Math.min(blockTokens, req.inputLength - offset);
    if (count <= 0) break;
    writeBlockTokens(id, seed, tokens, offset, count);
    offset += count;
  }
  return tokens;
}
