// SGLang's bootstrap room (PROTOCOLS.md 3b): a random integer in [0, 2^63-1] that the prefill and
// decode legs of one request share. With data parallelism the room also selects the prefill DP
// rank: room mod dpSize must equal dpRank, and the room must stay <= 2^63-1 for every rank and size.
// Rooms are bigints: 2^63-1 does not fit a double (see json.ts for how they reach the wire).
import { randomBytes } from 'node:crypto';
import { expectInteger } from '../util/validate.js';

export const MAX_BOOTSTRAP_ROOM = (1n << 63n) - 1n;

/** 63 random bits: a uniform integer in [0, 2^63-1]. */
export function randomRoomValue(): bigint {
  return randomBytes(8).readBigUInt64BE(0) >> 1n;
}

/**
 * Moves `random` (in [0, 2^63-1]) to the room of its dpSize-block whose residue is dpRank; when
 * that passes the maximum (only possible in the last, partial block) it takes the previous block,
 * which exists because such a block starts above dpSize.
 */
export function roomForRank(random: bigint, dpSize: number, dpRank: number): bigint {
  if (typeof random !== 'bigint' || random < 0n || random > MAX_BOOTSTRAP_ROOM) {
    throw new RangeError(`random must be a bigint in [0, 2^63-1], got ${String(random)}`);
  }
  expectInteger(dpSize, 'dpSize', 1, 0x10000);
  expectInteger(dpRank, 'dpRank', 0, dpSize - 1);
  const size = BigInt(dpSize);
  let room = random - (random % size) + BigInt(dpRank);
  if (room > MAX_BOOTSTRAP_ROOM) room -= size;
  return room;
}

/** A fresh room for a prefill worker of `dpSize` ranks, routed to `dpRank`. */
export function bootstrapRoom(dpSize: number, dpRank: number, random: () => bigint = randomRoomValue): bigint {
  return roomForRank(random(), dpSize, dpRank);
}
