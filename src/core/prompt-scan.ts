// A completions body's token-id prompt, read natively from the request bytes (see
// native/src/prompt.rs): the ids land in a Uint32Array and the caller parses only the rest of
// the body, so a 1k-token prompt no longer becomes a 6 KB string and a 1,024-element array first.
import { native } from './binding.js';
import { allocU32, writeBytes } from './result-slab.js';
import { expectUint32Array, expectUint8Array } from '../util/validate.js';

export interface ScannedPrompt {
  tokens: Uint32Array;
  /** Byte offsets of the prompt's JSON array in the body: [start, end). */
  start: number;
  end: number;
}

/** Scratch space kept between calls, up to this many ids; a larger body gets its own for the call. */
const MAX_KEPT_SCRATCH = 1 << 20;
let scratch = new Uint32Array(4096);
const span = new Uint32Array(2);

/**
 * The body's prompt when the body is one valid JSON object whose only `prompt` is a non-empty
 * array of plain-digit u32s; undefined otherwise (then parse the body whole).
 */
export function scanTokenPrompt(body: Uint8Array): ScannedPrompt | undefined {
  expectUint8Array(body, 'body');
  const need = (body.byteLength >>> 1) + 1;
  let out = scratch;
  if (out.length < need) {
    out = new Uint32Array(need);
    if (need <= MAX_KEPT_SCRATCH) scratch = out;
  }
  const count = native.scanTokenPrompt(body, out, span);
  if (count < 0) return undefined;
  const tokens = allocU32(count);
  tokens.set(out.subarray(0, count));
  return { tokens, start: span[0], end: span[1] };
}

let jsonScratch = Buffer.allocUnsafe(64 * 1024);

function jsonOut(need: number): Buffer {
  if (jsonScratch.length >= need) return jsonScratch;
  const out = Buffer.allocUnsafe(need);
  if (need <= MAX_KEPT_SCRATCH * 4) jsonScratch = out;
  return out;
}

/**
 * Token ids as the JSON array text engines receive (JSON.stringify's text), written natively as
 * ASCII and read as a one-byte string: `[${ids.join(',')}]` took 27 us for 1k ids.
 */
export function tokenIdsJsonText(tokens: Uint32Array): string {
  expectUint32Array(tokens, 'tokens');
  const out = jsonOut(tokens.length * 11 + 2);
  const length = native.tokenIdsJsonInto(tokens, out);
  return out.toString('latin1', 0, length);
}

/**
 * `head` (an object's JSON text without its closing brace) completed with `key` (JSON text of a
 * string) and the JSON array of `tokens`: the whole body written natively, as UTF-8 bytes of a
 * shared slab (no string per body).
 */
export function jsonWithTokenIds(head: string, key: string, tokens: Uint32Array): Uint8Array {
  expectUint32Array(tokens, 'tokens');
  const max = Buffer.byteLength(head) + Buffer.byteLength(key) + tokens.length * 11 + 4;
  return writeBytes(max, (out) => native.jsonWithTokenIdsInto(head, key, tokens, out));
}
