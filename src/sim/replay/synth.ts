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
 * use, instead of recomputed for every request naming it. Hash ids are numbered densely once, at
 * construction, so that a prompt reads its blocks' use counts and kept tokens from arrays (a Map
 * lookup and update per block and per prompt cost a tenth of a replay's prompt synthesis).
 */
export class PromptSynthesizer {
  /** Each request's contributing hash ids, as dense numbers. */
  private readonly dense = new Map<TraceRequest, Int32Array>();
  /** The hash id of each dense number. */
  private readonly hashIdOf: Float64Array;
  /** Uses left of each dense number's block. */
  private readonly usesLeft: Int32Array;
  /** Each dense number's tokens while it has more than one use left. */
  private readonly blocks: Array<Uint32Array | null>;
  private kept = 0;
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
    const numberOf = new Map<number, number>();
    const ids: number[] = [];
    const uses: number[] = [];
    for (const req of trace) {
      let dense = this.dense.get(req);
      if (dense === undefined) {
        dense = new Int32Array(this.contributing(req));
        for (let k = 0; k < dense.length; k++) {
          const id = req.hashIds[k];
          let n = numberOf.get(id);
          if (n === undefined) {
            numberOf.set(id, (n = ids.length));
            ids.push(id);
            uses.push(0);
          }
          dense[k] = n;
        }
        this.dense.set(req, dense);
      }
      for (let k = 0; k < dense.length; k++) uses[dense[k]]++;
    }
    this.hashIdOf = Float64Array.from(ids);
    this.usesLeft = Int32Array.from(uses);
    this.blocks = new Array<Uint32Array | null>(ids.length).fill(null);
  }

  /** Blocks kept for a later use. */
  get keptBlocks(): number {
    return this.kept;
  }

  /** The prompt of `req`, one of the trace's requests (each taken once). */
  prompt(req: TraceRequest): Uint32Array {
    const tokens = this.buffer(req.inputLength);
    const bt = this.blockTokens;
    const dense = this.dense.get(req);
    let covered = 0;
    if (dense === undefined) {
      // Not one of the trace's requests: its blocks written, nothing kept.
      for (let k = 0, n = this.contributing(req); k < n; k++) {
        const count = Math.min(bt, req.inputLength - covered);
        writeBlockTokens(req.hashIds[k], this.seed, tokens, covered, count);
        covered += count;
      }
    } else {
      const { usesLeft, blocks } = this;
      for (let k = 0; k < dense.length; k++) {
        const n = dense[k];
        const offset = covered;
        const count = Math.min(bt, req.inputLength - offset);
        covered = offset + count;
        const left = usesLeft[n];
        let block = blocks[n];
        if (block === null && left > 1) {
          block = new Uint32Array(bt);
          writeBlockTokens(this.hashIdOf[n], this.seed, block, 0, bt);
          blocks[n] = block;
          this.kept++;
        }
        if (block === null) writeBlockTokens(this.hashIdOf[n], this.seed, tokens, offset, count);
        else tokens.set(count === bt ? block : block.subarray(0, count), offset);
        if (left <= 1) {
          usesLeft[n] = 0;
          if (block !== null) {
            blocks[n] = null;
            this.kept--;
          }
        } else {
          usesLeft[n] = left - 1;
        }
      }
    }
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

  /** How many of the request's hash ids contribute tokens to its prompt (the first ones). */
  private contributing(req: TraceRequest): number {
    const n = Math.ceil(req.inputLength / this.blockTokens);
    return Math.max(0, Math.min(req.hashIds.length, n));
  }
}
