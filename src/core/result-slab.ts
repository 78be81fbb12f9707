// Small hash results are carved out of a shared slab instead of each getting its own
// ArrayBuffer: allocating a fresh backing store costs about 1 us in V8 here, as much as hashing a
// 1k-token prompt. As with Node's Buffer pool, a result's `.buffer` is the slab (its neighbours'
// bytes are other results), and a live result keeps its slab (SLAB_BYTES) alive.

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
