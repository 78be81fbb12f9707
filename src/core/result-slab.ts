// Small hash results are carved out of a shared slab instead of each getting its own
// ArrayBuffer: allocating a fresh backing store costs about 1 us in V8 here, as much as hashing a
// 1k-token prompt. As with Node's Buffer pool, a result's `.buffer` is the slab (its neighbours'
// bytes are other results), and a live result keeps its slab (SLAB_BYTES) alive.

const SLAB_BYTES = 32 * 1024;
/** Results up to this size share a slab; larger ones get their own buffer. */
const MAX_POOLED_BYTES = 2 * 1024;

let slab = new ArrayBuffer(SLAB_BYTES);
let used = 0;

/** A zeroed BigUint64Array of `length` entries for a native call to fill. */
export function allocU64(length: number): BigUint64Array {
  const bytes = length * 8;
  if (bytes > MAX_POOLED_BYTES) return new BigUint64Array(length);
  if (used + bytes > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const out = new BigUint64Array(slab, used, length);
  used += bytes;
  return out;
}
