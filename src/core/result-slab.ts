// Small hash results are carved out of a shared slab instead of each getting its own
// ArrayBuffer: allocating a fresh backing store costs about 1 us in V8 here, as much as hashing a
// 1k-token prompt. As with Node's Buffer pool, a result's `.buffer` is the slab (its neighbours'
// bytes are other results), and a live result keeps its slab (SLAB_BYTES) alive. Engine request
// bodies written natively, and the clients' request bodies copied in, come from a slab of their own
// (BODY_SLAB_BYTES): a string or a backing store per body (5 KB for a 1k-token prompt's ids) drove
// the router's scavenges.

const SLAB_BYTES = 64 * 1024;
/** Results up to this size (2k token ids) share a slab; larger ones get their own buffer. */
const MAX_POOLED_BYTES = 8 * 1024;

let slab = new ArrayBuffer(SLAB_BYTES);
let used = 0;

/** A zeroed BigUint64Array of `length` entries for a native call to fill. */
export function allocU64(length: number): BigUint64Array {
  const bytes = length * 8;
  if (bytes > MAX_POOLED_BYTES) return new BigUint64Array(length);
  const at = carve(bytes);
  return new BigUint64Array(slab, at, length);
}

/** A zeroed Uint32Array of `length` entries (request token ids) from the slab. */
export function allocU32(length: number): Uint32Array {
  const bytes = length * 4;
  if (bytes > MAX_POOLED_BYTES) return new Uint32Array(length);
  const at = carve(bytes);
  return new Uint32Array(slab, at, length);
}

/** Reserves `bytes` of the current slab (8-byte aligned, so every view type fits): their offset. */
function carve(bytes: number): number {
  if (used + bytes > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const at = used;
  used += (bytes + 7) & ~7;
  return at;
}

// Small body slabs: a slab lives as long as its last in-flight body, so one that outlives two
// scavenges is promoted, and its backing store is freed only by a full GC. 512 KB slabs (one
// per ~80 text requests) piled up as external memory and drove incremental marking and
// mark-compacts on the text path (1-2 per 2,500 requests at 500 req/s, pauses up to 4.5 ms):
// its added latency p99 was 2.65 ms against 1.40 ms with 64 KB slabs (frontend, 2026-11-28).
const BODY_SLAB_BYTES = 64 * 1024;
/** Bodies up to this size share a slab (a 1k-token prompt's needs 11.4 KB); larger ones get their own buffer. */
const MAX_POOLED_BODY_BYTES = 16 * 1024;

let bodySlab = Buffer.allocUnsafeSlow(BODY_SLAB_BYTES);
let bodyUsed = 0;

/** Bytes that `write` puts at the start of the buffer it gets (at least `maxBytes`), returning how many. */
export function writeBytes(maxBytes: number, write: (out: Buffer) => number): Buffer {
  if (maxBytes > MAX_POOLED_BODY_BYTES) {
    const own = Buffer.allocUnsafe(maxBytes);
    return own.subarray(0, write(own));
  }
  const at = bodyRoom(maxBytes);
  return bodyTaken(at, write(bodySlab.subarray(at, at + maxBytes)));
}

/** A copy of `src`, in the body slab when it is small (a request body's chunk). */
export function copyBytes(src: Uint8Array): Buffer {
  if (src.byteLength > MAX_POOLED_BODY_BYTES) return Buffer.from(src);
  const at = bodyRoom(src.byteLength);
  bodySlab.set(src, at);
  return bodyTaken(at, src.byteLength);
}

/** Where `maxBytes` fit in the body slab (a new slab when the current one is full). */
function bodyRoom(maxBytes: number): number {
  if (bodyUsed + maxBytes > BODY_SLAB_BYTES) {
    bodySlab = Buffer.allocUnsafeSlow(BODY_SLAB_BYTES);
    bodyUsed = 0;
  }
  return bodyUsed;
}

/** The `length` bytes written at `at`, kept (8-byte aligned, as carve). */
function bodyTaken(at: number, length: number): Buffer {
  bodyUsed = at + ((length + 7) & ~7);
  return bodySlab.subarray(at, at + length);
}
