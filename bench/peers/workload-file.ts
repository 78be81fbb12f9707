// The indexer workload as one binary file, for the Dynamo peer (bench/peers/dynamo-indexer/,
// src/workload.rs reads it): kvroute's events and queries, generated once in TypeScript, so both
// indexers get exactly the same work. Layout, little-endian, every section 8-byte aligned:
//
//   header   "KVRPEERW", u32 version (1), u32 blockSize, u32 stored, u32 removed, u32 queries, u32 0
//   stored   u32 worker, u32 dpRank, u32 blocks n, u32 hasParent, u64 parent (0 when none),
//            u64[n] engine block hashes, u64[n] local block hashes, u32[n * blockSize] tokens
//   removed  u32 worker, u32 dpRank, u32 blocks n, u32 0, u64[n] engine block hashes
//   queries  u32 blocks n, u32 tokens (n * blockSize), u64[n] local block hashes, u32[tokens] tokens
//
// Local block hashes are kvroute's computeBlockHashes of the tokens (Dynamo's LocalBlockHash: its
// indexer is handed hashes, kvroute's hashes the tokens itself); the tokens travel too, so the
// peer can check that Dynamo's own hashing agrees.
import { endianness } from 'node:os';

export const WORKLOAD_MAGIC = 'KVRPEERW';
export const WORKLOAD_VERSION = 1;
const HEADER_BYTES = 32;
const STORED_HEAD_BYTES = 24;
const REMOVED_HEAD_BYTES = 16;
const QUERY_HEAD_BYTES = 8;
const U32_MAX = 0xffff_ffff;

export interface PeerStoredEvent {
  worker: number;
  dpRank: number;
  parent: bigint | null;
  /** The engine's names of the blocks. */
  hashes: BigUint64Array;
  /** computeBlockHashes of the tokens, one per block. */
  localHashes: BigUint64Array;
  tokens: Uint32Array;
}

export interface PeerRemovedEvent {
  worker: number;
  dpRank: number;
  hashes: BigUint64Array;
}

export interface PeerQuery {
  localHashes: BigUint64Array;
  tokens: Uint32Array;
}

export interface PeerWorkload {
  blockSize: number;
  stored: PeerStoredEvent[];
  removed: PeerRemovedEvent[];
  queries: PeerQuery[];
}

function expectU32(value: number, what: string): void {
  if (!Number.isInteger(value) || value < 0 || value > U32_MAX) throw new RangeError(`${what} must be a u32, got ${value}`);
}

function expectBlocks(hashes: BigUint64Array, localHashes: BigUint64Array | undefined, tokens: Uint32Array | undefined, blockSize: number, what: string): void {
  if (localHashes && localHashes.length !== hashes.length) {
    throw new RangeError(`${what}: ${hashes.length} block hashes but ${localHashes.length} local hashes`);
  }
  if (tokens && tokens.length !== hashes.length * blockSize) {
    throw new RangeError(`${what}: ${hashes.length} blocks of ${blockSize} tokens need ${hashes.length * blockSize} tokens, got ${tokens.length}`);
  }
}

function assertLittleEndian(): void {
  // Arrays are copied as typed-array views: their in-memory order must be the file's.
  if (endianness() !== 'LE') throw new Error('the peer workload file is written on little-endian machines only');
}

/** The file's bytes; throws a RangeError naming the event or query that does not fit the layout. */
export function encodeWorkload(w: PeerWorkload): Uint8Array {
  assertLittleEndian();
  expectU32(w.blockSize, 'blockSize');
  if (w.blockSize === 0) throw new RangeError('blockSize must be positive');
  let size = HEADER_BYTES;
  w.stored.forEach((e, i) => {
    const what = `stored event ${i}`;
    expectU32(e.worker, `${what}: worker`);
    expectU32(e.dpRank, `${what}: dpRank`);
    expectBlocks(e.hashes, e.localHashes, e.tokens, w.blockSize, what);
    size += STORED_HEAD_BYTES + 16 * e.hashes.length + 4 * e.tokens.length;
  });
  w.removed.forEach((e, i) => {
    expectU32(e.worker, `removed event ${i}: worker`);
    expectU32(e.dpRank, `removed event ${i}: dpRank`);
    size += REMOVED_HEAD_BYTES + 8 * e.hashes.length;
  });
  w.queries.forEach((q, i) => {
    expectBlocks(q.localHashes, undefined, q.tokens, w.blockSize, `query ${i}`);
    size += QUERY_HEAD_BYTES + 8 * q.localHashes.length + 4 * q.tokens.length;
  });

  const buf = new ArrayBuffer(size);
  const view = new DataView(buf);
  const bytes = new Uint8Array(buf);
  let at = 0;
  const u32 = (x: number) => {
    view.setUint32(at, x, true);
    at += 4;
  };
  // Typed-array copies where aligned (tokens of an odd block size can shift the next section).
  const u64s = (xs: BigUint64Array) => {
    if (at % 8 === 0) new BigUint64Array(buf, at, xs.length).set(xs);
    else for (let i = 0; i < xs.length; i++) view.setBigUint64(at + 8 * i, xs[i], true);
    at += 8 * xs.length;
  };
  const u32s = (xs: Uint32Array) => {
    new Uint32Array(buf, at, xs.length).set(xs);
    at += 4 * xs.length;
  };
  bytes.set(Buffer.from(WORKLOAD_MAGIC, 'latin1'), 0);
  at = 8;
  for (const x of [WORKLOAD_VERSION, w.blockSize, w.stored.length, w.removed.length, w.queries.length, 0]) u32(x);
  for (const e of w.stored) {
    for (const x of [e.worker, e.dpRank, e.hashes.length, e.parent === null ? 0 : 1]) u32(x);
    view.setBigUint64(at, e.parent ?? 0n, true);
    at += 8;
    u64s(e.hashes);
    u64s(e.localHashes);
    u32s(e.tokens);
  }
  for (const e of w.removed) {
    for (const x of [e.worker, e.dpRank, e.hashes.length, 0]) u32(x);
    u64s(e.hashes);
  }
  for (const q of w.queries) {
    u32(q.localHashes.length);
    u32(q.tokens.length);
    u64s(q.localHashes);
    u32s(q.tokens);
  }
  if (at !== size) throw new Error(`workload encoder wrote ${at} of ${size} bytes`);
  return bytes;
}

/** Reads the file's bytes back (the Rust reader's twin, for tests and checks); throws on any damage. */
export function decodeWorkload(bytes: Uint8Array): PeerWorkload {
  assertLittleEndian();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number, what: string) => {
    if (at + n > bytes.byteLength) throw new RangeError(`peer workload truncated at byte ${at} while reading ${what}`);
  };
  const u32 = (what: string) => {
    need(4, what);
    const x = view.getUint32(at, true);
    at += 4;
    return x;
  };
  // Copies, so the result does not depend on the input's alignment or lifetime.
  const u64s = (n: number, what: string) => {
    need(8 * n, what);
    const out = new BigUint64Array(n);
    for (let i = 0; i < n; i++) out[i] = view.getBigUint64(at + 8 * i, true);
    at += 8 * n;
    return out;
  };
  const u32s = (n: number, what: string) => {
    need(4 * n, what);
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = view.getUint32(at + 4 * i, true);
    at += 4 * n;
    return out;
  };
  need(8, 'the magic');
  if (Buffer.from(bytes.subarray(0, 8)).toString('latin1') !== WORKLOAD_MAGIC) throw new RangeError('not a kvroute peer workload (magic)');
  at = 8;
  const version = u32('the version');
  if (version !== WORKLOAD_VERSION) throw new RangeError(`peer workload version ${version}, this reader knows ${WORKLOAD_VERSION}`);
  const blockSize = u32('the block size');
  const storedCount = u32('the stored count');
  const removedCount = u32('the removed count');
  const queryCount = u32('the query count');
  u32('reserved');
  if (blockSize === 0) throw new RangeError('peer workload: block size 0');
  const stored: PeerStoredEvent[] = [];
  for (let i = 0; i < storedCount; i++) {
    const worker = u32('a stored event');
    const dpRank = u32('a stored event');
    const n = u32('a stored event');
    const hasParent = u32('a stored event');
    need(8, 'a stored event');
    const parent = view.getBigUint64(at, true);
    at += 8;
    stored.push({
      worker,
      dpRank,
      parent: hasParent ? parent : null,
      hashes: u64s(n, 'block hashes'),
      localHashes: u64s(n, 'local hashes'),
      tokens: u32s(n * blockSize, 'tokens'),
    });
  }
  const removed: PeerRemovedEvent[] = [];
  for (let i = 0; i < removedCount; i++) {
    const worker = u32('a removed event');
    const dpRank = u32('a removed event');
    const n = u32('a removed event');
    u32('a removed event');
    removed.push({ worker, dpRank, hashes: u64s(n, 'removed hashes') });
  }
  const queries: PeerQuery[] = [];
  for (let i = 0; i < queryCount; i++) {
    const n = u32('a query');
    const t = u32('a query');
    if (t !== n * blockSize) throw new RangeError(`peer workload: a query of ${n} blocks holds ${t} tokens`);
    queries.push({ localHashes: u64s(n, 'query hashes'), tokens: u32s(t, 'query tokens') });
  }
  if (at !== bytes.byteLength) throw new RangeError(`peer workload: ${bytes.byteLength - at} bytes after the last query`);
  return { blockSize, stored, removed, queries };
}
