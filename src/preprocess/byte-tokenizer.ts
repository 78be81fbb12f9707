// The built-in default tokenizer: one token per UTF-8 byte (ids 0..255). It needs no model files,
// round-trips any text exactly, and gives the router and the simulated engine the same token ids.
import { NativeTextTokenizer } from '../core/tokenizer.js';
import type { TextTokenizer } from './types.js';

export const BYTE_VOCAB_SIZE = 256;

const encoder = new TextEncoder();
let nativeBytes: NativeTextTokenizer | undefined;

export const byteTokenizer = {
  name: 'byte' as const,

  /** The same tokenizer in the addon, made on first use (the router reads request bodies with it). */
  get native(): NativeTextTokenizer {
    nativeBytes ??= NativeTextTokenizer.bytes();
    return nativeBytes;
  },

  encode(text: string): Uint32Array {
    if (typeof text !== 'string') throw new TypeError(`text must be a string, got ${typeof text}`);
    return Uint32Array.from(encoder.encode(text));
  },

  /** Invalid UTF-8 (for example a cut multi-byte sequence) decodes to U+FFFD, never throws. */
  decode(ids: ArrayLike<number>): string {
    return new TextDecoder().decode(toBytes(ids));
  },
} satisfies TextTokenizer;

/**
 * Decodes byte tokens one at a time for streaming: a multi-byte character split across tokens is
 * held back until complete, so each emitted piece is valid text and the pieces concatenate to
 * decode(all ids).
 */
export class ByteStreamDecoder {
  private readonly decoder = new TextDecoder();

  push(ids: ArrayLike<number>): string {
    return this.decoder.decode(toBytes(ids), { stream: true });
  }

  /** Flushes a trailing incomplete sequence (as U+FFFD). */
  end(): string {
    return this.decoder.decode();
  }
}

function toBytes(ids: ArrayLike<number>): Uint8Array {
  if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') {
    throw new TypeError('ids must be an array-like of token ids');
  }
  const bytes = new Uint8Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= BYTE_VOCAB_SIZE) {
      throw new RangeError(`byte tokenizer ids are integers in [0, 255], got ${id} at index ${i}`);
    }
    bytes[i] = id;
  }
  return bytes;
}
