// The fleet-scale timeline as one binary file for the Dynamo peer (bench/peers/dynamo-indexer/,
// src/fleet.rs reads it). Little-endian:
//
//   header  "KVRFLEET", u32 version (1), u32 blockSize, u32 ops, u32 workers
//   op      u32 kind (0 query, 1 stored, 2 removed), u32 worker, u64 atNs (simulated time),
//           u32 blocks n, u32 hasParent, u64 parent (0 when none),
//           u64[n] engine block hashes (stored, removed) or local block hashes (query),
//           then for stored: u64[n] local block hashes
//
// Engine hashes are the blocks' ids in the fleet's hash space; local hashes are kvroute's
// computeBlockHashes of the tokens that stand for each block, which kvroute's indexer computes
// itself from the tokens and Dynamo's is handed, as its router hands them.
import { localHashesOf, OP_QUERY, OP_STORED, type FleetWorkload } from './workload.js';

export const FLEET_MAGIC = 'KVRFLEET';
export const FLEET_VERSION = 1;

export function encodeFleetOps(w: FleetWorkload): Buffer {
  const { blockSize } = w.options;
  let bytes = 24;
  for (const op of w.ops) bytes += 32 + op.blocks.length * 8 * (op.kind === OP_STORED ? 2 : 1);
  const buf = Buffer.alloc(bytes);
  buf.write(FLEET_MAGIC, 0, 'latin1');
  buf.writeUInt32LE(FLEET_VERSION, 8);
  buf.writeUInt32LE(blockSize, 12);
  buf.writeUInt32LE(w.ops.length, 16);
  buf.writeUInt32LE(w.workers, 20);
  let at = 24;
  for (const op of w.ops) {
    buf.writeUInt32LE(op.kind, at);
    buf.writeUInt32LE(op.worker, at + 4);
    buf.writeBigUInt64LE(BigInt(Math.round(op.atMs * 1e6)), at + 8);
    buf.writeUInt32LE(op.blocks.length, at + 16);
    buf.writeUInt32LE(op.parent >= 0 ? 1 : 0, at + 20);
    buf.writeBigUInt64LE(op.parent >= 0 ? BigInt(op.parent) : 0n, at + 24);
    at += 32;
    const first = op.kind === OP_QUERY ? localHashesOf(op.blocks, blockSize) : BigUint64Array.from(op.blocks, (b) => BigInt(b));
    for (const h of first) buf.writeBigUInt64LE(h, at), (at += 8);
    if (op.kind === OP_STORED) for (const h of localHashesOf(op.blocks, blockSize)) buf.writeBigUInt64LE(h, at), (at += 8);
  }
  return buf;
}
