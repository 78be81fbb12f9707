// Deterministic prompts for trace replay: each hash id stands for TRACE_BLOCK_TOKENS fixed
// pseudo-random token ids derived from the id (the last block cut to the remaining length), so
// equal ids give equal token prefixes at any router block size that divides 512.
import { writePromptTokens } from '../../core/synth-tokens.js';
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

/**
 * Writes the tokens of one hash id (its first `count` tokens) into `out` at `offset`: the
 * reference of the addon's synthesis (native/src/sim_prompt.rs), which writes the prompts;
 * test/sim/replay/synth.test.ts holds the two equal.
 */
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
  return new PromptSynthesizer(seed, blockTokens).prompt(req);
}

/** The buffer capacity (tokens) of a prompt: the next power of two, so that buffers of one capacity serve many lengths. */
function capacityFor(length: number): number {
  return length <= 16 ? 16 : 2 ** Math.ceil(Math.log2(length));
}

/**
 * The prompts of one trace: synthesizePrompt's tokens, every block written by the addon in one
 * call per prompt (src/core/synth-tokens.ts; bit for bit writeBlockTokens). Writing a block there
 * costs less than copying a kept copy of it here did (the synthesizer used to keep each recurring
 * block until its last use), so nothing is kept but spare buffers.
 */
export class PromptSynthesizer {
  /** The hash ids of the prompt being written (scratch, grown as needed). */
  private ids = new Float64Array(64);
  /**
   * Buffers of prompts nobody reads any more (recycle), by capacity in tokens (powers of two),
   * for later prompts: a replay's prompts are tens of megabytes per policy, whose fresh
   * allocations cost their zeroing and, as external memory, frequent full garbage collections.
   */
  private readonly spare = new Map<number, ArrayBuffer[]>();

  constructor(
    private readonly seed = 0,
    private readonly blockTokens = TRACE_BLOCK_TOKENS,
  ) {}

  /** The prompt of `req`. */
  prompt(req: TraceRequest): Uint32Array {
    const tokens = this.buffer(req.inputLength);
    const n = Math.max(0, Math.min(req.hashIds.length, Math.ceil(req.inputLength / this.blockTokens)));
    if (this.ids.length < n) this.ids = new Float64Array(Math.max(n, 2 * this.ids.length));
    const ids = this.ids;
    for (let k = 0; k < n; k++) ids[k] = req.hashIds[k];
    writePromptTokens(ids, n, this.seed, this.blockTokens, tokens);
    return tokens;
  }

  /**
   * A prompt of this synthesizer that nothing reads any more (its request finished: the router
   * and the engines are done with it): its buffer serves a later prompt.
   */
  recycle(tokens: Uint32Array): void {
    const capacity = tokens.buffer.byteLength / Uint32Array.BYTES_PER_ELEMENT;
    if (tokens.byteOffset !== 0 || capacity !== capacityFor(tokens.length)) return;
    let list = this.spare.get(capacity);
    if (list === undefined) this.spare.set(capacity, (list = []));
    list.push(tokens.buffer as ArrayBuffer);
  }

  /** A view of `length` tokens over a spare buffer of its capacity, or a fresh one. */
  private buffer(length: number): Uint32Array {
    const capacity = capacityFor(length);
    const spare = this.spare.get(capacity)?.pop();
    return new Uint32Array(spare ?? new ArrayBuffer(capacity * Uint32Array.BYTES_PER_ELEMENT), 0, length);
  }
}
