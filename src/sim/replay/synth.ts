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
  return new PromptSynthesizer([req], seed, blockTokens).prompt(req);
}

/** The buffer capacity (tokens) of a prompt: the next power of two, so that buffers of one capacity serve many lengths. */
function capacityFor(length: number): number {
  return length <= 16 ? 16 : 2 ** Math.ceil(Math.log2(length));
}

/**
 * The prompts of one trace, in its order: synthesizePrompt's tokens, with the block of a hash id
 * that recurs (shared prefixes: most of a trace's blocks) written once and kept until its last
 * use, instead of recomputed for every request naming it.
 */
export class PromptSynthesizer {
  private readonly usesLeft = new Map<number, number>();
  private readonly blocks = new Map<number, Uint32Array>();
  /**
   * Buffers of prompts nobody reads any more (recycle), by capacity in tokens (powers of two),
   * for later prompts: a replay's prompts are tens of megabytes per policy, whose fresh
   * allocations cost their zeroing and, as external memory, frequent full garbage collections.
   */
  private readonly spare = new Map<number, ArrayBuffer[]>();

  constructor(
    trace: readonly TraceRequest[],
    private readonly seed = 0,
    private readonly blockTokens = TRACE_BLOCK_TOKENS,
  ) {
    for (const req of trace) this.forEachBlock(req, (id) => this.usesLeft.set(id, (this.usesLeft.get(id) ?? 0) + 1));
  }

  /** The prompt of `req`, one of the trace's requests (each taken once). */
  prompt(req: TraceRequest): Uint32Array {
    const tokens = this.buffer(req.inputLength);
    let covered = 0;
    this.forEachBlock(req, (id, offset, count) => {
      covered = offset + count;
      const left = this.usesLeft.get(id) ?? 0;
      let block = this.blocks.get(id);
      if (block === undefined && left > 1) {
        block = new Uint32Array(this.blockTokens);
        writeBlockTokens(id, this.seed, block, 0, this.blockTokens);
        this.blocks.set(id, block);
      }
      if (block === undefined) writeBlockTokens(id, this.seed, tokens, offset, count);
      else tokens.set(block.subarray(0, count), offset);
      if (left <= 1) {
        this.usesLeft.delete(id);
        this.blocks.delete(id);
      } else {
        this.usesLeft.set(id, left - 1);
      }
    });
    // Tokens past the hash ids' blocks are zeros, in a recycled buffer too.
    tokens.fill(0, covered);
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

  /** The hash ids that contribute tokens to the prompt, with where and how many. */
  private forEachBlock(req: TraceRequest, fn: (id: number, offset: number, count: number) => void): void {
    let offset = 0;
    for (const id of req.hashIds) {
      const count = Math.min(this.blockTokens, req.inputLength - offset);
      if (count <= 0) break;
      fn(id, offset, count);
      offset += count;
    }
  }
}
