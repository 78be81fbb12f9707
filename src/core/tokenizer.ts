// A text tokenizer run natively (native/src/tokenize): a HuggingFace tokenizer.json through the
// `tokenizers` crate, or the built-in byte tokenizer. A prompt's ids land in a Uint32Array that
// routing hashes as it is; request bodies can be read and tokenized in one call.
import { native, type Binding } from './binding.js';
import type { ScannedPrompt } from './prompt-scan.js';
import { allocU32 } from './result-slab.js';
import { describe, expectUint8Array } from '../util/validate.js';

/** Ids are written here first, then copied into the caller's own (slab) array. */
let scratch = new Uint32Array(16_384);
/** Scratch kept between calls, up to this many ids; a longer text gets its own for the call. */
const MAX_KEPT_SCRATCH = 1 << 20;
const span = new Uint32Array(2);
/** Microseconds of the last native request read: [read, render, tokenize]. */
const timings = new Float64Array(3);

/** Where the last native request read (encodePromptBody, a chat template's encodeBody) spent its time. */
export interface PreprocessTimings {
  /** The body's JSON read and the prompt or messages taken out. */
  readUs: number;
  /** The chat template rendered (0 for a completions prompt). */
  renderUs: number;
  tokenizeUs: number;
}

export function lastPreprocessTimings(): PreprocessTimings {
  return { readUs: timings[0], renderUs: timings[1], tokenizeUs: timings[2] };
}

/** The prefix cache's counters since it was made (see withPrefixCache). */
export interface PrefixCacheStats {
  /** Prompts that began with a cached prefix. */
  hits: number;
  /** Prompts long enough to look up that found none. */
  misses: number;
  /** Token ids copied from the cache instead of tokenized (the tokens saved). */
  reusedTokens: number;
  /** Token ids the looked-up prompts still tokenized. */
  encodedTokens: number;
  evictions: number;
  /** Bytes the cache holds now, and its pieces (message-boundary prefixes). */
  bytes: number;
  pieces: number;
}

const cacheStats = new Float64Array(7);

/** A body read, rendered and tokenized off the event loop: ids, and where the value read stands. */
type EncodedBody = Binding.NativeEncodedBody;

export class NativeTextTokenizer {
  private constructor(
    /** @internal The binding's tokenizer (for src/core/chat-template.ts). */
    readonly binding: Binding.NativeTokenizer,
  ) {}

  /** Reads a tokenizer.json (its UTF-8 bytes) on this thread: a large vocabulary takes a second or more. */
  static fromJson(json: Uint8Array): NativeTextTokenizer {
    expectUint8Array(json, 'json');
    return new NativeTextTokenizer(native.NativeTokenizer.fromJson(json));
  }

  /** Reads a tokenizer.json on a libuv thread, leaving the event loop free. */
  static async load(json: Uint8Array): Promise<NativeTextTokenizer> {
    expectUint8Array(json, 'json');
    return new NativeTextTokenizer(await native.loadTokenizer(Buffer.from(json.buffer, json.byteOffset, json.byteLength)));
  }

  /** The byte tokenizer (one id per UTF-8 byte, as src/preprocess/byte-tokenizer.ts). */
  static bytes(): NativeTextTokenizer {
    return new NativeTextTokenizer(native.NativeTokenizer.bytes());
  }

  /** The ids of `text`, special tokens written in it included (none added). */
  encode(text: string): Uint32Array {
    if (typeof text !== 'string') throw new TypeError(`text must be a string, got ${describe(text)}`);
    return collectIds(this.binding, (out) => this.binding.encode(text, out));
  }

  /**
   * A completions body's text prompt (a string or a batch of one), read from the bytes and
   * tokenized in one call, with the byte span of the prompt's value; undefined when the body is
   * not that plain case (then parse it whole).
   */
  encodePromptBody(body: Uint8Array): ScannedPrompt | undefined {
    expectUint8Array(body, 'body');
    return scannedIds(this.binding, (out, where, times) => this.binding.encodePromptBody(body, out, where, times));
  }

  /**
   * The same tokenizer with a prefix cache of its own, of at most `maxBytes` (0: none): a text
   * that begins with a recent text's prefix, up to a point where the tokenizer cannot merge
   * across (before a chat template's special token), reuses that prefix's ids. The ids are
   * always those of the whole text.
   */
  withPrefixCache(maxBytes: number): NativeTextTokenizer {
    if (typeof maxBytes !== 'number' || !Number.isInteger(maxBytes) || maxBytes < 0)
      throw new RangeError(`maxBytes must be a non-negative integer, got ${describe(maxBytes)}`);
    return new NativeTextTokenizer(this.binding.withPrefixCache(maxBytes));
  }

  /** The prefix cache's counters; undefined without a cache. */
  prefixCacheStats(): PrefixCacheStats | undefined {
    if (!this.binding.cacheStats(cacheStats)) return undefined;
    const [hits, misses, reusedTokens, encodedTokens, evictions, bytes, pieces] = cacheStats;
    return { hits, misses, reusedTokens, encodedTokens, evictions, bytes, pieces };
  }

  /** encodePromptBody on a libuv thread (the body is copied first): the event loop goes on meanwhile. */
  async encodePromptBodyAsync(body: Uint8Array): Promise<ScannedPrompt | undefined> {
    expectUint8Array(body, 'body');
    return fromEncodedBody(await this.binding.encodePromptBodyAsync(body));
  }

  /** The text of `ids`, special tokens left out unless asked for. */
  decode(ids: Uint32Array | ArrayLike<number>, skipSpecialTokens = true): string {
    return this.binding.decode(toUint32Array(ids), skipSpecialTokens);
  }
}

/**
 * @internal The ids a native call wrote through `tokenizer` (see native/src/bindings/tokenize.rs), the
 * byte span it wrote into `where` and its stage timings into `times`: `call` returns their count, -1 for "not the plain case", and a
 * count above the array's length means they wait in the tokenizer for takeIds.
 */
export function scannedIds(
  tokenizer: Binding.NativeTokenizer,
  call: (out: Uint32Array, where: Uint32Array, times: Float64Array) => number,
): ScannedPrompt | undefined {
  let declined = false;
  const tokens = collectIds(tokenizer, (out) => {
    const count = call(out, span, timings);
    declined = count < 0;
    return Math.max(count, 0);
  });
  return declined ? undefined : { tokens, start: span[0], end: span[1] };
}

/** @internal An off-thread read's result as the synchronous calls give it (their timings too). */
export function fromEncodedBody(found: EncodedBody | null): ScannedPrompt | undefined {
  if (found === null) return undefined;
  timings.set(found.timings);
  return { tokens: found.ids, start: found.start, end: found.end };
}

function collectIds(tokenizer: Binding.NativeTokenizer, call: (out: Uint32Array) => number): Uint32Array {
  const count = call(scratch);
  if (count > scratch.length) {
    const own = new Uint32Array(count);
    tokenizer.takeIds(own);
    if (count <= MAX_KEPT_SCRATCH) scratch = new Uint32Array(count);
    return own;
  }
  const ids = allocU32(count);
  ids.set(scratch.subarray(0, count));
  return ids;
}

function toUint32Array(ids: Uint32Array | ArrayLike<number>): Uint32Array {
  if (ids instanceof Uint32Array) return ids;
  if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') {
    throw new TypeError(`ids must be a Uint32Array or an array of token ids, got ${describe(ids)}`);
  }
  const out = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new RangeError(`ids[${i}] must be a token id (an integer in [0, 2^32)), got ${id}`);
    out[i] = id;
  }
  return out;
}
