// XXH3-64 in plain TypeScript: the reference the native hashing is measured against. A u64 is a
// pair of u32 numbers (hi, lo); results come back through the module registers RH/RL so that the
// hot loops allocate nothing (no BigInt until a caller asks for one). Follows the XXH3 spec and
// the xxhash-rust crate the addon uses, all input sizes, seeded.

const DEFAULT_SECRET = Uint8Array.from([
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40,
  0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74,
  0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53,
  0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f,
  0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5,
  0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26,
  0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16,
  0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
]);
const SECRET_SIZE = 192;
const STRIPE_LEN = 64;
const STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE_LEN) / 8;
const BLOCK_LEN = STRIPE_LEN * STRIPES_PER_BLOCK;

// Primes as (hi, lo).
const P32_1 = 0x9e3779b1;
const P32_2 = 0x85ebca77;
const P32_3 = 0xc2b2ae3d;
const P64_1_H = 0x9e3779b1,
  P64_1_L = 0x85ebca87;
const P64_2_H = 0xc2b2ae3d,
  P64_2_L = 0x27d4eb4f;
const P64_3_H = 0x165667b1,
  P64_3_L = 0x9e3779f9;
const P64_4_H = 0x85ebca77,
  P64_4_L = 0xc2b2ae63;
const P64_5_H = 0x27d4eb2f,
  P64_5_L = 0x165667c5;
const MX1_H = 0x16566791,
  MX1_L = 0x9e3779f9;
const MX2_H = 0x9fb21c65,
  MX2_L = 0x1e98df25;

/** Result registers of the u64 helpers: (RH, RL) is the last result. */
let RH = 0;
let RL = 0;

/** Full 32 x 32 -> 64-bit product into (RH, RL), exact, through 16-bit halves. */
function mul32(a: number, b: number): void {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  RL = Math.imul(a, b) >>> 0;
  RH = (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0;
}

/** Low 64 bits of a 64 x 64 product. */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  mul32(al, bl);
  RH = (RH + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/** The 128-bit product of two u64, its two halves xor-ed together. */
function mul128Fold64(ah: number, al: number, bh: number, bl: number): void {
  mul32(al, bl);
  const llH = RH,
    llL = RL;
  mul32(al, bh);
  const lhH = RH,
    lhL = RL;
  mul32(ah, bl);
  const hlH = RH,
    hlL = RL;
  mul32(ah, bh);
  const t1 = llH + lhL + hlL;
  const w1 = t1 >>> 0;
  const t2 = lhH + hlH + RL + (t1 - w1) / 0x1_0000_0000;
  const w2 = t2 >>> 0;
  const w3 = (RH + (t2 - w2) / 0x1_0000_0000) >>> 0;
  RH = (w1 ^ w3) >>> 0;
  RL = (llL ^ w2) >>> 0;
}

function add64(ah: number, al: number, bh: number, bl: number): void {
  const lo = al + bl;
  RL = lo >>> 0;
  RH = (ah + bh + (lo > 0xffffffff ? 1 : 0)) >>> 0;
}

function sub64(ah: number, al: number, bh: number, bl: number): void {
  const lo = al - bl;
  RL = lo >>> 0;
  RH = (ah - bh - (lo < 0 ? 1 : 0)) >>> 0;
}

function bswap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

/** XXH3's avalanche: h ^= h >> 37; h *= MX1; h ^= h >> 32. */
function avalanche(h: number, l: number): void {
  l = (l ^ (h >>> 5)) >>> 0;
  mul64(h, l, MX1_H, MX1_L);
  RL = (RL ^ RH) >>> 0;
}

/** XXH64's avalanche (for inputs of 0 to 3 bytes). */
function avalanche64(h: number, l: number): void {
  l = (l ^ (h >>> 1)) >>> 0;
  mul64(h, l, P64_2_H, P64_2_L);
  h = RH;
  l = (RL ^ ((RL >>> 29) | (RH << 3))) >>> 0;
  h = (h ^ (h >>> 29)) >>> 0;
  mul64(h, l, P64_3_H, P64_3_L);
  RL = (RL ^ RH) >>> 0;
}

/** XXH3's rrmxmx (inputs of 4 to 8 bytes). */
function rrmxmx(h: number, l: number, len: number): void {
  // h ^= rotl(h, 49) ^ rotl(h, 24)
  const r49h = (l << 17) | (h >>> 15);
  const r49l = (h << 17) | (l >>> 15);
  const r24h = (h << 24) | (l >>> 8);
  const r24l = (l << 24) | (h >>> 8);
  h = (h ^ r49h ^ r24h) >>> 0;
  l = (l ^ r49l ^ r24l) >>> 0;
  mul64(h, l, MX2_H, MX2_L);
  const ph = RH,
    pl = RL;
  add64(0, ph >>> 3, 0, len); // h ^= (h >> 35) + len
  h = (ph ^ RH) >>> 0;
  l = (pl ^ RL) >>> 0;
  mul64(h, l, MX2_H, MX2_L);
  RL = (RL ^ ((RL >>> 28) | (RH << 4))) >>> 0;
  RH = (RH ^ (RH >>> 28)) >>> 0;
}

/** Secret words as (hi, lo) at a byte offset of the secret in use. */
let secretView: DataView = new DataView(DEFAULT_SECRET.buffer);
function sH(o: number): number {
  return secretView.getUint32(o + 4, true);
}
function sL(o: number): number {
  return secretView.getUint32(o, true);
}

/** mix16B: mul128_fold64(in[0..8] ^ (secret[0..8] + seed), in[8..16] ^ (secret[8..16] - seed)). */
function mix16B(v: DataView, o: number, so: number, seedH: number, seedL: number): void {
  add64(sH(so), sL(so), seedH, seedL);
  const ah = (v.getUint32(o + 4, true) ^ RH) >>> 0;
  const al = (v.getUint32(o, true) ^ RL) >>> 0;
  sub64(sH(so + 8), sL(so + 8), seedH, seedL);
  const bh = (v.getUint32(o + 12, true) ^ RH) >>> 0;
  const bl = (v.getUint32(o + 8, true) ^ RL) >>> 0;
  mul128Fold64(ah, al, bh, bl);
}

function len0to16(v: DataView, o: number, len: number, seedH: number, seedL: number): void {
  if (len > 8) {
    add64((sH(24) ^ sH(32)) >>> 0, (sL(24) ^ sL(32)) >>> 0, seedH, seedL);
    const loH = (v.getUint32(o + 4, true) ^ RH) >>> 0;
    const loL = (v.getUint32(o, true) ^ RL) >>> 0;
    sub64((sH(40) ^ sH(48)) >>> 0, (sL(40) ^ sL(48)) >>> 0, seedH, seedL);
    const hiH = (v.getUint32(o + len - 4, true) ^ RH) >>> 0;
    const hiL = (v.getUint32(o + len - 8, true) ^ RL) >>> 0;
    // acc = len + swap64(lo) + hi + mul128_fold64(lo, hi)
    mul128Fold64(loH, loL, hiH, hiL);
    const mh = RH,
      ml = RL;
    add64(0, len, bswap32(loL), bswap32(loH));
    add64(RH, RL, hiH, hiL);
    add64(RH, RL, mh, ml);
    avalanche(RH, RL);
  } else if (len >= 4) {
    const sh = (seedH ^ bswap32(seedL)) >>> 0;
    const in1 = v.getUint32(o, true);
    const in2 = v.getUint32(o + len - 4, true);
    sub64((sH(8) ^ sH(16)) >>> 0, (sL(8) ^ sL(16)) >>> 0, sh, seedL);
    rrmxmx((in1 ^ RH) >>> 0, (in2 ^ RL) >>> 0, len);
  } else if (len > 0) {
    const c1 = v.getUint8(o);
    const c2 = v.getUint8(o + (len >> 1));
    const c3 = v.getUint8(o + len - 1);
    const combo = ((c1 << 16) | (c2 << 24) | c3 | (len << 8)) >>> 0;
    add64(0, (sL(0) ^ sL(4)) >>> 0, seedH, seedL);
    avalanche64(RH, (RL ^ combo) >>> 0);
  } else {
    avalanche64((seedH ^ sH(56) ^ sH(64)) >>> 0, (seedL ^ sL(56) ^ sL(64)) >>> 0);
  }
}

/** Running sum of the 17..240-byte paths. */
let AH = 0;
let AL = 0;

function mixAdd(v: DataView, o: number, so: number, seedH: number, seedL: number): void {
  mix16B(v, o, so, seedH, seedL);
  add64(AH, AL, RH, RL);
  AH = RH;
  AL = RL;
}

function len17to128(v: DataView, o: number, len: number, seedH: number, seedL: number): void {
  mul64(0, len, P64_1_H, P64_1_L);
  AH = RH;
  AL = RL;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        mixAdd(v, o + 48, 96, seedH, seedL);
        mixAdd(v, o + len - 64, 112, seedH, seedL);
      }
      mixAdd(v, o + 32, 64, seedH, seedL);
      mixAdd(v, o + len - 48, 80, seedH, seedL);
    }
    mixAdd(v, o + 16, 32, seedH, seedL);
    mixAdd(v, o + len - 32, 48, seedH, seedL);
  }
  mixAdd(v, o, 0, seedH, seedL);
  mixAdd(v, o + len - 16, 16, seedH, seedL);
  avalanche(AH, AL);
}

function len129to240(v: DataView, o: number, len: number, seedH: number, seedL: number): void {
  mul64(0, len, P64_1_H, P64_1_L);
  AH = RH;
  AL = RL;
  const rounds = len >>> 4;
  for (let i = 0; i < 8; i++) mixAdd(v, o + 16 * i, 16 * i, seedH, seedL);
  avalanche(AH, AL);
  AH = RH;
  AL = RL;
  for (let i = 8; i < rounds; i++) mixAdd(v, o + 16 * i, 16 * (i - 8) + 3, seedH, seedL);
  mixAdd(v, o + len - 16, 136 - 17, seedH, seedL);
  avalanche(AH, AL);
}

const accH = new Uint32Array(8);
const accL = new Uint32Array(8);

function accumulate512(v: DataView, o: number, so: number): void {
  for (let i = 0; i < 8; i++) {
    const dh = v.getUint32(o + 8 * i + 4, true);
    const dl = v.getUint32(o + 8 * i, true);
    const kh = (dh ^ sH(so + 8 * i)) >>> 0;
    const kl = (dl ^ sL(so + 8 * i)) >>> 0;
    const j = i ^ 1;
    add64(accH[j], accL[j], dh, dl);
    accH[j] = RH;
    accL[j] = RL;
    mul32(kl, kh);
    add64(accH[i], accL[i], RH, RL);
    accH[i] = RH;
    accL[i] = RL;
  }
}

function scramble(so: number): void {
  for (let i = 0; i < 8; i++) {
    const h = accH[i];
    const l = (accL[i] ^ (h >>> 15)) >>> 0; // acc ^= acc >> 47
    mul64((h ^ sH(so + 8 * i)) >>> 0, (l ^ sL(so + 8 * i)) >>> 0, 0, P32_1);
    accH[i] = RH;
    accL[i] = RL;
  }
}

/** The default secret with the seed folded in (inputs over 240 bytes); the last one is cached. */
let derivedSeedH = 0;
let derivedSeedL = 0;
let derivedSecret = DEFAULT_SECRET;
function secretFor(seedH: number, seedL: number): Uint8Array {
  if (seedH === 0 && seedL === 0) return DEFAULT_SECRET;
  if (derivedSecret !== DEFAULT_SECRET && seedH === derivedSeedH && seedL === derivedSeedL) return derivedSecret;
  const out = new Uint8Array(SECRET_SIZE);
  const d = new DataView(out.buffer);
  const s = new DataView(DEFAULT_SECRET.buffer);
  for (let i = 0; i < SECRET_SIZE; i += 16) {
    add64(s.getUint32(i + 4, true), s.getUint32(i, true), seedH, seedL);
    d.setUint32(i, RL, true);
    d.setUint32(i + 4, RH, true);
    sub64(s.getUint32(i + 12, true), s.getUint32(i + 8, true), seedH, seedL);
    d.setUint32(i + 8, RL, true);
    d.setUint32(i + 12, RH, true);
  }
  derivedSeedH = seedH;
  derivedSeedL = seedL;
  derivedSecret = out;
  return out;
}

function hashLong(v: DataView, o: number, len: number, seedH: number, seedL: number): void {
  const secret = secretFor(seedH, seedL);
  secretView = new DataView(secret.buffer);
  accH.set([0, P64_1_H, P64_2_H, P64_3_H, P64_4_H, 0, P64_5_H, 0]);
  accL.set([P32_3, P64_1_L, P64_2_L, P64_3_L, P64_4_L, P32_2, P64_5_L, P32_1]);
  const blocks = Math.floor((len - 1) / BLOCK_LEN);
  for (let b = 0; b < blocks; b++) {
    for (let s = 0; s < STRIPES_PER_BLOCK; s++) accumulate512(v, o + b * BLOCK_LEN + s * STRIPE_LEN, s * 8);
    scramble(SECRET_SIZE - STRIPE_LEN);
  }
  const stripes = Math.floor((len - 1 - BLOCK_LEN * blocks) / STRIPE_LEN);
  for (let s = 0; s < stripes; s++) accumulate512(v, o + blocks * BLOCK_LEN + s * STRIPE_LEN, s * 8);
  accumulate512(v, o + len - STRIPE_LEN, SECRET_SIZE - STRIPE_LEN - 7);
  // merge: result = len * P64_1 + sum of mul128_fold64(acc pairs ^ secret[11..]); avalanche
  mul64(0, len, P64_1_H, P64_1_L);
  let rh = RH,
    rl = RL;
  for (let i = 0; i < 4; i++) {
    const so = 11 + 16 * i;
    mul128Fold64((accH[2 * i] ^ sH(so)) >>> 0, (accL[2 * i] ^ sL(so)) >>> 0, (accH[2 * i + 1] ^ sH(so + 8)) >>> 0, (accL[2 * i + 1] ^ sL(so + 8)) >>> 0);
    add64(rh, rl, RH, RL);
    rh = RH;
    rl = RL;
  }
  secretView = new DataView(DEFAULT_SECRET.buffer);
  avalanche(rh, rl);
}

/** XXH3-64 of v[o..o+len) with the seed (hi, lo); the result is left in (RH, RL). */
function hashInto(v: DataView, o: number, len: number, seedH: number, seedL: number): void {
  if (len <= 16) len0to16(v, o, len, seedH, seedL);
  else if (len <= 128) len17to128(v, o, len, seedH, seedL);
  else if (len <= 240) len129to240(v, o, len, seedH, seedL);
  else hashLong(v, o, len, seedH, seedL);
}

function splitSeed(seed: bigint): [number, number] {
  if (typeof seed !== 'bigint' || seed < 0n || seed >= 1n << 64n) throw new RangeError('seed must be a u64 bigint');
  return [Number(seed >> 32n), Number(seed & 0xffffffffn)];
}

/** XXH3-64 of `data` with `seed`. */
export function xxh3_64(data: Uint8Array, seed = 0n): bigint {
  const [sh, sl] = splitSeed(seed);
  hashInto(new DataView(data.buffer, data.byteOffset, data.byteLength), 0, data.byteLength, sh, sl);
  return (BigInt(RH) << 32n) | BigInt(RL);
}

/** Local hashes of the complete blocks of `tokens` (little-endian u32), as computeBlockHashes. */
export function blockHashesReference(tokens: Uint32Array, blockSize: number, seed = 1337n): BigUint64Array {
  const [sh, sl] = splitSeed(seed);
  const blocks = Math.floor(tokens.length / blockSize);
  const out = new BigUint64Array(blocks);
  // Written as u32 halves: no BigInt per block.
  const words = new Uint32Array(out.buffer);
  const v = new DataView(tokens.buffer, tokens.byteOffset, tokens.byteLength);
  const bytes = blockSize * 4;
  for (let b = 0; b < blocks; b++) {
    hashInto(v, b * bytes, bytes, sh, sl);
    words[2 * b] = RL;
    words[2 * b + 1] = RH;
  }
  return out;
}

/** Chained sequence hashes, as computeSequenceHashes: seq[i] = XXH3(seq[i-1] ++ local[i], 1337). */
export function sequenceHashesReference(local: BigUint64Array): BigUint64Array {
  const out = new BigUint64Array(local.length);
  const pair = new BigUint64Array(2);
  const v = new DataView(pair.buffer);
  for (let i = 0; i < local.length; i++) {
    if (i === 0) {
      out[0] = local[0];
      continue;
    }
    pair[0] = out[i - 1];
    pair[1] = local[i];
    hashInto(v, 0, 16, 0, 1337);
    out[i] = (BigInt(RH) << 32n) | BigInt(RL);
  }
  return out;
}
