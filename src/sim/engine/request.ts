// Requests: what callers submit, what the model emits per generated token, and the model's
// per-request state (token buffer, block table, block hashes, progress).
import { engineHashBlocks } from '../../core/engine-hash.js';
import { hashBlock, loraSeed, ROOT_HI, ROOT_LO } from './block-hash.js';
import { HI_WORD, LO_WORD } from './events.js';

/** Runs of at least this many blocks are hashed in the addon (a call costs about a block's hashing in JavaScript). */
const NATIVE_HASH_MIN_BLOCKS = 4;

/** Generated tokens a sequence's token buffer has room for from the start. */
const INITIAL_OUTPUT_ROOM = 1024;

export interface SimRequest {
  id: string;
  /** Kept by the engine, not copied: not to be changed once submitted. */
  promptTokens: Uint32Array;
  maxTokens: number;
  loraName?: string;
  /** Decode side of disaggregation: these leading prompt tokens arrive by KV transfer (no compute). */
  kvTransferredTokens?: number;
  /** Prefill role: keep the blocks referenced after finishing, until release(id) or prefillHoldMs. */
  holdBlocksAfterFinish?: boolean;
  /** Never stop on end-of-sequence (only maxTokens or the cache size end the request). */
  ignoreEos?: boolean;
  /** Scheduling priority, lower first (vLLM's `priority`); non-zero only under schedulingPolicy 'priority'. Default 0. */
  priority?: number;
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
  /** Lower is scheduled first (schedulingPolicy 'priority'). */
  readonly priority: number;
  /** Submission order on its engine: the tie-break of equal priorities. */
  arrivalSeq = 0;

  /**
   * The prompt as submitted: kept, not copied (the engine never writes it; a caller must not
   * change it after submitting). A replay submits tens of megabytes of prompts per policy: a copy
   * of each cost its memcpy and, through the external memory it allocated, frequent full GCs.
   */
  readonly prompt: Uint32Array;
  /**
   * Where `tail` starts: the prompt's complete blocks are read from `prompt`, every later token
   * from `tail`. A multiple of the block size, so no block spans both.
   */
  readonly tailStart: number;
  /** Tokens from `tailStart` on: the prompt's last partial block, then the generated tokens; grows by doubling. */
  tail: Uint32Array;
  numTokens: number;
  generated = 0;
  /** Leading tokens whose KV is in this sequence's blocks. */
  numComputed = 0;
  /**
   * Block table: block i holds tokens [i*bs, (i+1)*bs), for i < blockCount (an Int32Array, as the
   * addon's cache reads and writes runs of it); grows by doubling.
   */
  table: Int32Array;
  blockCount = 0;
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

  /** `blockSize`: the block size of every ensureHashes call (default 1: the whole prompt is copied to `tail`, any block size works). */
  constructor(req: Required<Omit<SimRequest, 'loraName' | 'priority'>> & { loraName: string | null; priority?: number }, streamKey: number, blockSize = 1) {
    this.id = req.id;
    this.priority = req.priority ?? 0;
    this.promptLen = req.promptTokens.length;
    this.maxTokens = req.maxTokens;
    this.loraName = req.loraName;
    this.lora = loraSeed(req.loraName);
    this.ignoreEos = req.ignoreEos;
    this.holdAfterFinish = req.holdBlocksAfterFinish;
    this.transferTokens = req.kvTransferredTokens;
    this.streamKey = streamKey;
    this.prompt = req.promptTokens;
    this.tailStart = blockSize === 1 ? 0 : Math.floor(this.promptLen / blockSize) * blockSize;
    // Room for the generated tokens of most requests (growing copies the tail).
    this.tail = new Uint32Array(this.promptLen - this.tailStart + Math.min(req.maxTokens, INITIAL_OUTPUT_ROOM));
    this.tail.set(req.promptTokens.subarray(this.tailStart));
    this.numTokens = this.promptLen;
    this.hashes = new BigUint64Array(0);
    this.hashWords = new Uint32Array(0);
    this.table = new Int32Array(Math.ceil((this.promptLen + 1) / Math.max(blockSize, 16)) + 1);
  }

  /** The block table's entries (a view). */
  get blocks(): Int32Array {
    return this.table.subarray(0, this.blockCount);
  }

  /** Makes room for `count` blocks in the table. */
  reserveBlocks(count: number): void {
    if (count <= this.table.length) return;
    const grown = new Int32Array(Math.max(count, 2 * this.table.length));
    grown.set(this.table.subarray(0, this.blockCount));
    this.table = grown;
  }

  hashHi(i: number): number {
    return this.hashWords[2 * i + HI_WORD];
  }

  hashLo(i: number): number {
    return this.hashWords[2 * i + LO_WORD];
  }

  appendToken(tokenId: number): void {
    const at = this.numTokens - this.tailStart;
    if (at === this.tail.length) {
      const grown = new Uint32Array(Math.max(this.tail.length * 2, 16));
      grown.set(this.tail);
      this.tail = grown;
    }
    this.tail[at] = tokenId;
    this.numTokens++;
    this.generated++;
  }

  /** The array holding token `at` (and the rest of its block). */
  tokenArray(at: number): Uint32Array {
    return at < this.tailStart ? this.prompt : this.tail;
  }

  /** Where token `at` sits in tokenArray(at). */
  tokenOffset(at: number): number {
    return at < this.tailStart ? at : at - this.tailStart;
  }

  /**
   * Tokens [start, end) (known ones): a view of the buffers (whose entries never change once
   * written), or a copy when the range spans the prompt and the tail.
   */
  tokenRange(start: number, end: number): Uint32Array {
    const split = this.tailStart;
    if (end <= split) return this.prompt.subarray(start, end);
    if (start >= split) return this.tail.subarray(start - split, end - split);
    const out = new Uint32Array(end - start);
    out.set(this.prompt.subarray(start, split));
    out.set(this.tail.subarray(0, end - split), split - start);
    return out;
  }

  /** Computes the hashes of complete blocks up to `count` (the tokens must be known). */
  ensureHashes(count: number, blockSize: number, scratch: Uint32Array): void {
    if (count <= this.hashCount) return;
    if (this.tailStart % blockSize !== 0) throw new RangeError(`a sequence split at token ${this.tailStart} cannot hash blocks of ${blockSize} tokens`);
    if (count > this.hashes.length) this.growHashes(count, blockSize);
    const words = this.hashWords;
    const { prompt, tail, tailStart } = this;
    let i = this.hashCount;
    // Long runs (a prompt at admission) in the addon: the prompt's blocks, then the tail's.
    const promptBlocks = tailStart / blockSize;
    for (let run = 0; run < 2 && count - i >= NATIVE_HASH_MIN_BLOCKS; run++) {
      const inPrompt = i < promptBlocks;
      const end = inPrompt ? Math.min(count, promptBlocks) : count;
      const parentHi = i === 0 ? ROOT_HI : words[2 * i - 2 + HI_WORD];
      const parentLo = i === 0 ? ROOT_LO : words[2 * i - 2 + LO_WORD];
      engineHashBlocks(
        inPrompt ? prompt : tail,
        inPrompt ? i * blockSize : i * blockSize - tailStart,
        blockSize,
        end - i,
        parentHi,
        parentLo,
        this.lora,
        this.hashes,
        i,
      );
      i = end;
    }
    for (; i < count; i++) {
      const parentHi = i === 0 ? ROOT_HI : words[2 * i - 2 + HI_WORD];
      const parentLo = i === 0 ? ROOT_LO : words[2 * i - 2 + LO_WORD];
      const start = i * blockSize;
      if (start < tailStart) hashBlock(prompt, start, blockSize, parentHi, parentLo, this.lora, scratch);
      else hashBlock(tail, start - tailStart, blockSize, parentHi, parentLo, this.lora, scratch);
      words[2 * i + HI_WORD] = scratch[0];
      words[2 * i + LO_WORD] = scratch[1];
    }
    this.hashCount = count;
  }

  private growHashes(count: number, blockSize: number): void {
    // Room for the blocks of the token buffer (the prompt and the first generated tokens), then doubling.
    const grown = new BigUint64Array(Math.max(count, Math.floor((this.tailStart + this.tail.length) / blockSize), 2 * this.hashes.length));
    grown.set(this.hashes.subarray(0, this.hashCount));
    this.hashes = grown;
    this.hashWords = new Uint32Array(grown.buffer);
  }
}
