// A HuggingFace tokenizer.json, encoded and decoded natively (native/src/tokenize, the
// `tokenizers` crate): a prompt's ids land in a Uint32Array that routing hashes as it is.
import { native, type Binding } from './binding.js';
import { allocU32 } from './result-slab.js';
import { describe, expectUint8Array } from '../util/validate.js';

/** Ids are written here first, then copied into the caller's own (slab) array. */
let scratch = new Uint32Array(16_384);
/** Scratch kept between calls, up to this many ids; a longer text gets its own for the call. */
const MAX_KEPT_SCRATCH = 1 << 20;

export class NativeHfTokenizer {
  private constructor(private readonly inner: Binding.NativeTokenizer) {}

  /** Reads a tokenizer.json (its UTF-8 bytes) on this thread: a large vocabulary takes a second or more. */
  static fromJson(json: Uint8Array): NativeHfTokenizer {
    expectUint8Array(json, 'json');
    return new NativeHfTokenizer(native.NativeTokenizer.fromJson(json));
  }

  /** Reads a tokenizer.json on a libuv thread, leaving the event loop free. */
  static async load(json: Uint8Array): Promise<NativeHfTokenizer> {
    expectUint8Array(json, 'json');
    return new NativeHfTokenizer(await native.loadTokenizer(Buffer.from(json.buffer, json.byteOffset, json.byteLength)));
  }

  /** The ids of `text`, special tokens written in it included (none added). */
  encode(text: string): Uint32Array {
    if (typeof text !== 'string') throw new TypeError(`text must be a string, got ${describe(text)}`);
    const count = this.inner.encode(text, scratch);
    if (count > scratch.length) {
      const own = new Uint32Array(count);
      this.inner.takeIds(own);
      if (count <= MAX_KEPT_SCRATCH) scratch = new Uint32Array(count);
      return own;
    }
    const ids = allocU32(count);
    ids.set(scratch.subarray(0, count));
    return ids;
  }

  /** The text of `ids`, special tokens left out unless asked for. */
  decode(ids: Uint32Array | ArrayLike<number>, skipSpecialTokens = true): string {
    return this.inner.decode(toUint32Array(ids), skipSpecialTokens);
  }
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
