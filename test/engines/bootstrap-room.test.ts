import { describe, expect, it } from 'vitest';
import { MAX_BOOTSTRAP_ROOM, bootstrapRoom, randomRoomValue, roomForRank } from '../../src/engines/bootstrap-room.js';

const SIZES = [1, 2, 3, 5, 6, 7, 9, 16, 32, 48, 49, 64, 128];

describe('bootstrap room', () => {
  it('room mod dpSize == dpRank and room <= 2^63-1 for every rank, at the largest random value', () => {
    for (const size of SIZES) {
      for (let rank = 0; rank < size; rank++) {
        for (const r of [MAX_BOOTSTRAP_ROOM, MAX_BOOTSTRAP_ROOM - 1n, MAX_BOOTSTRAP_ROOM - BigInt(size), 0n, 1n, BigInt(size - 1)]) {
          const room = roomForRank(r, size, rank);
          expect(room % BigInt(size), `size ${size} rank ${rank} r ${r}`).toBe(BigInt(rank));
          expect(room <= MAX_BOOTSTRAP_ROOM && room >= 0n, `size ${size} rank ${rank} r ${r}`).toBe(true);
          // It stays close to the random value (uniformity is preserved up to one block).
          const d = room > r ? room - r : r - room;
          expect(d < BigInt(2 * size)).toBe(true);
        }
      }
    }
  });

  it('random values are 63-bit and spread', () => {
    const seen = new Set<bigint>();
    let top = false;
    for (let i = 0; i < 2000; i++) {
      const v = randomRoomValue();
      expect(v >= 0n && v <= MAX_BOOTSTRAP_ROOM).toBe(true);
      if (v > 1n << 62n) top = true;
      seen.add(v);
    }
    expect(seen.size).toBe(2000);
    expect(top).toBe(true);
  });

  it('bootstrapRoom uses the given source of randomness', () => {
    expect(bootstrapRoom(49, 48, () => MAX_BOOTSTRAP_ROOM)).toBe(MAX_BOOTSTRAP_ROOM - (MAX_BOOTSTRAP_ROOM % 49n) + 48n - 49n);
    expect(bootstrapRoom(1, 0, () => MAX_BOOTSTRAP_ROOM)).toBe(MAX_BOOTSTRAP_ROOM);
  });

  it('refuses bad ranks, sizes and random values', () => {
    expect(() => roomForRank(5n, 4, 4)).toThrow(RangeError);
    expect(() => roomForRank(5n, 0, 0)).toThrow(RangeError);
    expect(() => roomForRank(5n, 2.5, 0)).toThrow(RangeError);
    expect(() => roomForRank(-1n, 2, 0)).toThrow(RangeError);
    expect(() => roomForRank(MAX_BOOTSTRAP_ROOM + 1n, 2, 0)).toThrow(RangeError);
    expect(() => roomForRank(5 as unknown as bigint, 2, 0)).toThrow(RangeError);
    expect(() => roomForRank(5n, '2' as unknown as number, 0)).toThrow(TypeError);
  });
});
