// The engine's own content hash of a KV block, chained with its parent block's hash. It is a
// 2 x 32-bit murmur3-style hash (different from the router's XXH3 with seed 1337), so the router's
// engine-hash -> local-hash mapping is exercised for real. Computed with Math.imul on 32-bit lanes:
// no BigInt arithmetic per token; one bigint per block for the cache key and the events.
import { hashString32, mix32 } from './rng.js';

/** Parent lanes of a sequence's first block. */
export const ROOT_HI = 0x243f6a88;
export const ROOT_LO = 0x85a308d3;

export function loraSeed(loraName: string | null): number {
  return loraName === null ? 0 : hashString32(loraName, 0x4c6f5241);
}

/** Hash of tokens[start, start+len) chained to (parentHi, parentLo); writes [hi, lo] into `out`. */
export function hashBlock(tokens: Uint32Array, start: number, len: number, parentHi: number, parentLo: number, lora: number, out: Uint32Array): void {
  let h1 = (parentLo ^ lora) | 0;
  let h2 = (parentHi ^ mix32(lora ^ 0x9e3779b9)) | 0;
  const end = start + len;
  for (let i = start; i < end; i++) {
    const t = tokens[i];
    let k1 = Math.imul(t, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    h1 ^= Math.imul(k1, 0x1b873593);
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
    let k2 = Math.imul(t, 0x85ebca77);
    k2 = (k2 << 16) | (k2 >>> 16);
    h2 ^= Math.imul(k2, 0xc2b2ae3d);
    h2 = (h2 << 17) | (h2 >>> 15);
    h2 = (Math.imul(h2, 5) + 0x38495ab5) | 0;
  }
  h1 ^= len;
  h2 ^= len;
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  h1 = mix32(h1);
  h2 = mix32(h2);
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  out[0] = h1 >>> 0;
  out[1] = h2 >>> 0;
}

/** The u64 of a hash's two 32-bit halves (signed or unsigned). */
export function toU64(hi: number, lo: number): bigint {
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}
