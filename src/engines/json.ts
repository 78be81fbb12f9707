// JSON text for engine request bodies. Bodies may carry 64-bit integers the router generates
// (SGLang's bootstrap_room goes up to 2^63-1, which a double cannot hold): those are bigints,
// written as exact decimal digits. A prompt's token ids travel as RawJson: their text as the
// client wrote it (or as the router joined them), written as is. Only top-level values (a
// bigint, an array of bigints for batched rooms, a RawJson) are special; anywhere else
// JSON.stringify's own TypeError stands. A body the router did not change goes out as the
// client's own bytes (see markVerbatim).

import { jsonWithTokenIds, tokenIdsJsonText } from '../core/prompt-scan.js';

/**
 * A body field whose JSON text is already written: a long token-id prompt is never rebuilt as
 * an array of numbers and serialised again. Top-level body fields only (stringifyBody).
 */
export class RawJson {
  private decoded: string | undefined;

  private constructor(
    private readonly bytes: Uint8Array | undefined,
    text: string | undefined,
    /** Token ids this value is the JSON array of, written when needed (stringifyBody writes them in place). */
    readonly tokenIds?: Uint32Array,
  ) {
    this.decoded = text;
  }

  static ofText(text: string): RawJson {
    return new RawJson(undefined, text);
  }

  /** UTF-8 JSON text in `bytes` (kept, not copied: the caller never changes them). */
  static ofBytes(bytes: Uint8Array): RawJson {
    return new RawJson(bytes, undefined);
  }

  /** The JSON array of `tokens` (kept, not copied). */
  static ofTokenIds(tokens: Uint32Array): RawJson {
    return new RawJson(undefined, undefined, tokens);
  }

  get text(): string {
    if (this.decoded === undefined) {
      this.decoded = this.tokenIds
        ? tokenIdsJsonText(this.tokenIds)
        : Buffer.from(this.bytes!.buffer, this.bytes!.byteOffset, this.bytes!.byteLength).toString('utf8');
    }
    return this.decoded;
  }

  /** Nested, it would serialise as `{}`: refuse loudly instead. */
  toJSON(): never {
    throw new TypeError('a RawJson value can only be a top-level field of an engine body');
  }
}

/** Token ids as a JSON array (what JSON.stringify of the ids as numbers writes), written natively when sent. */
export function tokenIdsJson(tokens: Uint32Array): RawJson {
  return RawJson.ofTokenIds(tokens);
}

const VERBATIM = Symbol('kvroute.verbatimJson');

/**
 * Marks `body` as the parse of `bytes` (a client's request that routing left unchanged), so engine
 * calls send those bytes instead of serialising the body again (a 1k-token prompt cost about 20 us
 * to stringify and encode, on the router's one thread). The body is frozen: an edit would make
 * the bytes lie, so it throws instead. Copies (copyFields, withFields, as every handoff makes) are unmarked.
 */
export function markVerbatim<T extends Record<string, unknown>>(body: T, bytes: Uint8Array): T {
  Object.defineProperty(body, VERBATIM, { value: bytes, enumerable: false });
  return Object.freeze(body);
}

/**
 * What to send for `body`: the client's bytes when it is marked verbatim, else its JSON (UTF-8
 * bytes when it carries token ids, which are written natively; text otherwise).
 */
export function engineBody(body: Record<string, unknown>): string | Uint8Array {
  return (body as { [VERBATIM]?: Uint8Array })[VERBATIM] ?? serializeBody(body);
}

/** The JSON text of an engine body. */
export function stringifyBody(body: Record<string, unknown>): string {
  const out = serializeBody(body);
  return typeof out === 'string' ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength).toString('utf8');
}

function serializeBody(body: Record<string, unknown>): string | Uint8Array {
  let special = false;
  for (const key in body) {
    if (isSpecialValue(body[key])) {
      special = true;
      break;
    }
  }
  if (!special) return JSON.stringify(body);
  const parts: string[] = [];
  // One id array is written last, straight into the body's bytes: no string of its own (a 1k-token
  // prompt's ids are 5 KB, and each such string per request cost the router scavenges).
  let idsKey: string | undefined;
  let ids: Uint32Array | undefined;
  for (const key of Object.keys(body)) {
    const value = body[key];
    let text: string | undefined;
    if (value instanceof RawJson && value.tokenIds && ids === undefined) {
      idsKey = key;
      ids = value.tokenIds;
      continue;
    }
    if (value instanceof RawJson) text = value.text;
    else if (typeof value === 'bigint') text = value.toString();
    else if (isBigintArray(value)) text = `[${value.join(',')}]`;
    else text = JSON.stringify(value);
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`); // undefined/functions are skipped, as JSON.stringify does
  }
  if (ids !== undefined) return jsonWithTokenIds(`{${parts.join(',')}`, JSON.stringify(idsKey), ids);
  return `{${parts.join(',')}}`;
}

function isSpecialValue(v: unknown): boolean {
  return v instanceof RawJson || typeof v === 'bigint' || isBigintArray(v);
}

function isBigintArray(v: unknown): v is bigint[] {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'bigint');
}
