// Request bodies, bounded: a body is read up to its limit and no further, so an oversized upload
// costs at most limit + 1 bytes of memory before it is refused with 413.
import { copyBytes } from '../../core/result-slab.js';
import { payloadTooLarge } from './errors.js';

export type BodySource = Uint8Array | AsyncIterable<Uint8Array | string> | null | undefined;

/**
 * Collects a body into one Uint8Array; throws the 413 HttpError as soon as more than `limit`
 * bytes arrived (the rest of a stream is not read).
 */
export async function collectBody(source: BodySource, limit: number, declaredLength?: string): Promise<Uint8Array> {
  if (declaredLength !== undefined && declaredLength !== '') {
    const n = Number(declaredLength);
    if (Number.isFinite(n) && n > limit) throw payloadTooLarge(limit);
  }
  if (source === null || source === undefined) return new Uint8Array(0);
  if (source instanceof Uint8Array) {
    if (source.byteLength > limit) throw payloadTooLarge(limit);
    return source;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of source) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    total += bytes.byteLength;
    if (total > limit) throw payloadTooLarge(limit);
    chunks.push(bytes);
  }
  if (chunks.length === 1) return chunks[0];
  return Buffer.concat(chunks, total);
}

/**
 * Accumulates pushed chunks (uWebSockets.js onData hands out buffers valid only during the
 * callback, so each is copied) and keeps at most limit + 1 bytes.
 */
export class BoundedBodyBuffer {
  private chunks: Buffer[] = [];
  private total = 0;

  constructor(private readonly limit: number) {}

  /**
   * Copies a chunk in; false once the body is over the limit (stop feeding it). Chunks up to 16 KB
   * are copied into the shared body slab (core/result-slab.ts): a request body of a few KB had a
   * backing store of its own, malloc'd and later swept and freed, on every request.
   */
  push(chunk: ArrayBuffer): boolean {
    if (this.total > this.limit) return false;
    const room = this.limit + 1 - this.total;
    this.chunks.push(copyBytes(new Uint8Array(chunk, 0, Math.min(chunk.byteLength, room))));
    this.total += chunk.byteLength;
    return this.total <= this.limit;
  }

  get overLimit(): boolean {
    return this.total > this.limit;
  }

  /** The body so far (over the limit: limit + 1 bytes, which collectBody refuses). */
  bytes(): Uint8Array {
    if (this.chunks.length === 1) return this.chunks[0];
    return Buffer.concat(this.chunks);
  }
}
