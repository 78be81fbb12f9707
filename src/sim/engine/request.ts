// Requests: what callers submit, what the model emits per generated token, and the model's
// per-request state (token buffer, block table, block hashes, progress).
import { hashBlock, loraSeed, ROOT_HI, ROOT_LO } from './block-hash.js';
import { HI_WORD, LO_WORD } from './events.js';

/** Generated tokens a sequence's token buffer has room for from the start. */
const INITIAL_OUTPUT_ROOM = 1024;

export interface SimRequest {
  id: string;
  promptTokens: Uint32Array;
  maxTokens: number;
  loraName?: string;
  /** Decode side of disaggregation: these leading prompt tokens arrive by KV transfer (no compute). */
  kvTransferredTokens?: number;
  /** Prefill role: keep the blocks referenced after finishing, until release(id) or prefillHoldMs. */
  holdBlocksAfterFinish?: boolean;
  /** Never stop on end-of-sequence (only maxTokens or the cache size end the request). */
  ignoreEos?: boolean;
}

export type FinishReason = 'length' | 'stop' | 'abort';

export interface TokenOutput {
  id: string;
  tokenId: number;
  /** 0-based output position. */
  index: number;
  finishReason?: FinishReason;
  promptTokens: number;
  /** Prompt tokens found in the local prefix cache when the request was first scheduled. */
  cachedTokens: number;
}

export type SequenceState = 'waiting' | 'transferring' | 'running' | 'held' | 'finished';

/** The model's state of one request. */
export class Sequence {
  readonly id: string;
  readonly promptLen: number;
  readonly maxTokens: number;
  readonly loraName: string | null;
  readonly lora: number;
  readonly ignoreEos: boolean;
  readonly holdAfterFinish: boolean;
  /** Prompt tokens to receive by KV transfer (0 = none). */
  readonly transferTokens: number;
  readonly streamKey: number;

  /** Prompt then generated tokens; grows by doubling. */
  tokens: Uint32Array;
  numTokens: number;
  generated = 0;
  /** Leading tokens whose KV is in this sequence's blocks. */
  numComputed = 0;
  /** Block table: block i holds tokens [i*bs, (i+1)*bs). */
  blocks: number[] = [];
  /** Leading complete blocks already offered to the prefix cache (registered, deduplicated or kept private). */
  committedBlocks = 0;
  /** Set after a cache reset: this table's earlier blocks are no longer cached, so later ones cannot be chained. */
  chainBroken = false;
  /**
   * Hashes of leading complete blocks (content only: stable across preemptions), `hashCount` of
   * them; entries never change once written, so events may hold views of them. Grows by doubling.
   */
  hashes: BigUint64Array;
  /** The same buffer as 32-bit words: hash i's halves at 2i + HI_WORD and 2i + LO_WORD (the prefix cache's key). */
  hashWords: Uint32Array;
  hashCount = 0;

  state: SequenceState = 'waiting';
  cachedTokens = 0;
  admitted = false;
  transferDone = false;
  /** Tokens covered once the KV transfer completes (set at admission). */
  transferEnd = 0;
  readyAtMs = 0;
  /** release() came before the request finished: free its blocks at the finish instead of holding them. */
  holdReleased = false;
  holdUntilMs = 0;
  /** The step that last scheduled this sequence (preemption spares sequences already scheduled). */
  scheduledStep = -1;

  constructor(req: Required<Omit<SimRequest, 'loraName'>> & { loraName: string | null }, streamKey: number) {
    this.id = req.id;
    this.promptLen = req.promptTokens.length;
    this.maxTokens = req.maxTokens;
    this.loraName = req.loraName;
    this.lora = loraSeed(req.loraName);
    this.ignoreEos = req.ignoreEos;
    this.holdAfterFinish = req.holdBlocksAfterFinish;
    this.transferTokens = req.kvTransferredTokens;
    this.streamKey = streamKey;
    // Room for the generated tokens of most requests (growing copies the whole context).
    this.tokens = new Uint32Array(this.promptLen + Math.min(req.maxTokens, INITIAL_OUTPUT_ROOM));
    this.tokens.set(req.promptTokens);
    this.numTokens = this.promptLen;
    this.hashes = new BigUint64Array(0);
    this.hashWords = new Uint32Array(0);
  }

  hashHi(i: number): number {
    return this.hashWords[2 * i + HI_WORD];
  }

  hashLo(i: number): number {
    return this.hashWords[2 * i + LO_WORD];
  }

  appendToken(tokenId: number): void {
    if (this.numTokens === this.tokens.length) {
      const grown = new Uint32Array(this.tokens.length * 2);
      grown.set(this.tokens);
      this.tokens = grown;
    }
    this.tokens[this.numTokens++] = tokenId;
    this.generated++;
  }

  /** Computes the hashes of complete blocks up to `count` (the tokens must be known). */
  ensureHashes(count: number, blockSize: number, scratch: Uint32Array): void {
    if (count <= this.hashCount) return;
    if (count > this.hashes.length) this.growHashes(count, blockSize);
    const words = this.hashWords;
    for (let i = this.hashCount; i < count; i++) {
      const parentHi = i === 0 ? ROOT_HI : words[2 * i - 2 + HI_WORD];
      const parentLo = i === 0 ? ROOT_LO : words[2 * i - 2 + LO_WORD];
      hashBlock(this.tokens, i * blockSize, blockSize, parentHi, parentLo, this.lora, scratch);
      words[2 * i + HI_WORD] = scratch[0];
      words[2 * i + LO_WORD] = scratch[1];
    }
    this.hashCount = count;
  }

  private growHashes(count: number, blockSize: number): void {
    // Room for the blocks of the token buffer (the prompt and the first generated tokens), then doubling.
    const grown = new BigUint64Array(Math.max(count, Math.floor(this.tokens.length / blockSize), 2 * this.hashes.length));
    grown.set(this.hashes.subarray(0, this.hashCount));
    this.hashes = grown;
    this.hashWords = new Uint32Array(grown.buffer);
  }
}
