// The addon's hand-written entry points (native/src/bindings/fast.rs, fast_events.rs) called directly with bad
// arguments: each is refused with the error class and code of the generated bindings, and a
// refused call changes nothing.
import { describe, expect, it } from 'vitest';
import { NativeErrorCode } from '../../src/core/errors.js';
import { fast } from '../../src/core/fast-calls.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore } from '../../src/core/routing-core.js';
import { BS, hashes, localOf, tokensOf } from './indexer-fixtures.js';

const DECISION_LEN = 15 + 9 * 8; // native/src/bindings/routing.rs: header, then 9 entries per candidate

function fixture() {
  // Time stands at 0, the time the direct calls pass.
  const clock = () => 0;
  const indexer = new KvIndexer({ blockSize: BS, clock });
  indexer.applyStored(1, 0, null, hashes(10, 11), tokensOf([1, 5]));
  const core = new RoutingCore(indexer, { blockSize: BS, seed: 1, clock });
  core.setWorkers([{ worker: 1 }, { worker: 2 }]);
  const indexerHandle = (indexer as unknown as { handle: number }).handle;
  const coreHandle = (core as unknown as { handle: number }).handle;
  return { indexer, core, indexerHandle, coreHandle };
}

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

describe('findMatchesFast', () => {
  it('matches as findMatches does, and refuses bad arguments with their codes', () => {
    const { indexer, indexerHandle } = fixture();
    const out = new Int32Array(8);
    // One match (count x 2), no worker id needing its high int.
    expect(fast.findMatchesFast(indexerHandle, localOf([1, 5]), out, 0, false)).toBe(2);
    expect([...out.subarray(0, 4)]).toEqual([1, 0, 0, 2]);
    // Time and earlyExit may be left out.
    out.fill(0);
    expect(fast.findMatchesFast(indexerHandle, localOf([1, 5]), out)).toBe(2);
    expect([...out.subarray(0, 4)]).toEqual([1, 0, 0, 2]);
    expect(fast.findMatchesFast(indexerHandle, localOf([1, 5]), out, 0, true)).toBe(2);
    const typeErrors = [
      () => fast.findMatchesFast(indexerHandle, [1n] as never, out),
      () => fast.findMatchesFast(indexerHandle, new BigInt64Array(1) as never, out),
      () => fast.findMatchesFast(indexerHandle, localOf([1]), out, 0, 1 as never),
      () => fast.findMatchesFast(indexerHandle, localOf([1]), out, '0' as never),
      () => fast.findMatchesFast(indexerHandle, localOf([1]), new Float64Array(8) as never),
      () => fast.findMatchesFast('0' as never, localOf([1]), out),
      () => (fast.findMatchesFast as (...a: unknown[]) => number)(indexerHandle, localOf([1])),
    ];
    for (const call of typeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.code).toBe(NativeErrorCode.invalidType);
    }
    for (const call of [() => fast.findMatchesFast(indexerHandle, localOf([1]), out, Number.NaN), () => fast.findMatchesFast(2 ** 31, localOf([1]), out)]) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(RangeError);
      expect(e.code).toBe(NativeErrorCode.outOfRange);
    }
    expect(thrown(typeErrors[0]).message).toMatch(/localHashes must be a typed array/);
    expect(thrown(typeErrors[1]).message).toMatch(/localHashes has the wrong element type/);
    expect(thrown(typeErrors[4]).message).toMatch(/out has the wrong element type/);
    expect(indexer.stats().blocks).toBe(2);
  });
});

describe('applyStoredFast and applyRemovedFast', () => {
  it('apply events as applyStored and applyRemoved do, and refuse bad arguments with their codes', () => {
    const { indexer, indexerHandle } = fixture();
    const twin = new KvIndexer({ blockSize: BS, clock: () => 0 });
    twin.applyStored(1, 0, null, hashes(10, 11), tokensOf([1, 5]), { loraName: undefined });
    // A child of block 11 (parent given), a root block on another worker, a refused unknown parent.
    expect(fast.applyStoredFast(indexerHandle, 1, 0, hashes(12), tokensOf([9]), hashes(11), 0)).toBe(1);
    expect(twin.applyStored(1, 0, 11n, hashes(12), tokensOf([9]), {})).toBe(true);
    expect(fast.applyStoredFast(indexerHandle, 2, 3, hashes(20), tokensOf([1]), new BigUint64Array(0), 0)).toBe(1);
    expect(twin.applyStored(2, 3, null, hashes(20), tokensOf([1]), {})).toBe(true);
    expect(fast.applyStoredFast(indexerHandle, 1, 0, hashes(30), tokensOf([4]), hashes(99), 0)).toBe(0);
    expect(twin.applyStored(1, 0, 99n, hashes(30), tokensOf([4]), {})).toBe(false);
    expect(indexer.findMatches(localOf([1, 5, 9]))).toEqual(twin.findMatches(localOf([1, 5, 9])));
    expect(indexer.stats()).toEqual(twin.stats());
    // Removals: one known, one unknown (counted), as the generated binding counts them.
    expect(fast.applyRemovedFast(indexerHandle, 1, 0, hashes(12, 77), 0)).toBe(twin.applyRemoved(1, 0, hashes(12, 77), {}));
    expect(indexer.stats()).toEqual(twin.stats());
    const before = indexer.stats();
    const typeErrors = [
      () => fast.applyStoredFast(indexerHandle, 1, 0, [1n] as never, tokensOf([1]), new BigUint64Array(0), 0),
      () => fast.applyStoredFast(indexerHandle, 1, 0, hashes(40), [1] as never, new BigUint64Array(0), 0),
      () => fast.applyStoredFast(indexerHandle, 1, 0, hashes(40), tokensOf([1]), null as never, 0),
      () => fast.applyStoredFast(indexerHandle, '1' as never, 0, hashes(40), tokensOf([1]), new BigUint64Array(0), 0),
      () => fast.applyStoredFast(indexerHandle, 1, 0, hashes(40), tokensOf([1]), new BigUint64Array(0), '0' as never),
      () => (fast.applyStoredFast as (...a: unknown[]) => number)(indexerHandle, 1, 0, hashes(40), tokensOf([1])),
      () => fast.applyRemovedFast(indexerHandle, 1, 0, new BigInt64Array(1) as never, 0),
      () => (fast.applyRemovedFast as (...a: unknown[]) => number)(indexerHandle, 1, 0, hashes(10)),
    ];
    for (const call of typeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.code).toBe(NativeErrorCode.invalidType);
    }
    const rangeErrors = [
      // Tokens not blocks x blockSize, a time that is not finite, a rank past 65535, no such handle.
      () => fast.applyStoredFast(indexerHandle, 1, 0, hashes(40), new Uint32Array(3), new BigUint64Array(0), 0),
      () => fast.applyStoredFast(indexerHandle, 1, 0, hashes(40), tokensOf([1]), new BigUint64Array(0), Number.NaN),
      () => fast.applyStoredFast(indexerHandle, 1, 65536, hashes(40), tokensOf([1]), new BigUint64Array(0), 0),
      () => fast.applyStoredFast(2 ** 31, 1, 0, hashes(40), tokensOf([1]), new BigUint64Array(0), 0),
      () => fast.applyRemovedFast(indexerHandle, 1, 0, hashes(10), Number.POSITIVE_INFINITY),
      () => fast.applyRemovedFast(2 ** 31, 1, 0, hashes(10), 0),
    ];
    for (const call of rangeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(RangeError);
      expect(e.code).toBe(NativeErrorCode.outOfRange);
    }
    expect(thrown(rangeErrors[0]).message).toMatch(/tokenIds must hold blockHashes.length x blockSize = 1 x 4 = 4 tokens, got 3/);
    // Refused calls changed nothing.
    expect(indexer.stats()).toEqual(before);
    // An indexer in approximate mode refuses both, as the generated binding does.
    const approx = new KvIndexer({ blockSize: BS, mode: 'approximate' });
    const approxHandle = (approx as unknown as { handle: number }).handle;
    for (const call of [
      () => fast.applyStoredFast(approxHandle, 1, 0, hashes(40), tokensOf([1]), new BigUint64Array(0), 0),
      () => fast.applyRemovedFast(approxHandle, 1, 0, hashes(40), 0),
    ]) {
      const e = thrown(call);
      expect(e.message).toMatch(/needs an indexer in 'events' mode/);
      expect(e.code).toBe(NativeErrorCode.wrongMode);
    }
  });
});

describe('routeFast', () => {
  it('routes as route() does, books under the exact request id, and queries without booking', () => {
    const { core, coreHandle } = fixture();
    const out = new Float64Array(DECISION_LEN);
    const n = fast.routeFast(coreHandle, tokensOf([1, 5, 9]), 'q', 0, out, false);
    expect(n).toBe(2);
    expect([out[0], out[2], out[3]]).toEqual([1, 2, 12]);
    expect(core.stats().active).toBe(0);
    // An id longer than the inline buffer, with characters of several UTF-8 bytes.
    const id = `req-${'é'.repeat(200)}-${'😀'.repeat(30)}`;
    fast.routeFast(coreHandle, tokensOf([1, 5, 9]), id, 0, out, true);
    expect(core.stats().active).toBe(1);
    expect(() => core.route(tokensOf([1]), { requestId: id })).toThrow(/already booked/);
    expect(core.free(id)).toBe(true);
    expect(core.stats().active).toBe(0);
  });

  it('refuses bad arguments with their codes and books nothing', () => {
    const { core, coreHandle } = fixture();
    const out = new Float64Array(DECISION_LEN);
    const t = tokensOf([1]);
    const typeErrors = [
      () => fast.routeFast(coreHandle, [1, 2, 3, 4] as never, 'a', 0, out, true),
      () => fast.routeFast(coreHandle, new Int32Array(4) as never, 'a', 0, out, true),
      () => fast.routeFast(coreHandle, t, 5 as never, 0, out, true),
      () => fast.routeFast(coreHandle, t, 'a', '0' as never, out, true),
      () => fast.routeFast(coreHandle, t, 'a', 0, [0] as never, true),
      () => fast.routeFast(coreHandle, t, 'a', 0, out, 'yes' as never),
      () => (fast.routeFast as (...a: unknown[]) => number)(coreHandle, t, 'a'),
    ];
    for (const call of typeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.code).toBe(NativeErrorCode.invalidType);
    }
    const rangeErrors = [
      () => fast.routeFast(coreHandle, t, 'a', 0, new Float64Array(10), true),
      () => fast.routeFast(coreHandle, t, 'a', Number.NaN, out, true),
      () => fast.routeFast(coreHandle, t, '', 0, out, true),
      () => fast.routeFast(2 ** 31, t, 'a', 0, out, true),
    ];
    for (const call of rangeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(RangeError);
      expect(e.code).toBe(NativeErrorCode.outOfRange);
    }
    expect(core.stats()).toMatchObject({ booked: 0, active: 0 });
  });

  it('throws routing refusals with their codes', () => {
    const { core, coreHandle } = fixture();
    const out = new Float64Array(DECISION_LEN);
    fast.routeFast(coreHandle, tokensOf([1]), 'a', 0, out, true);
    expect(thrown(() => fast.routeFast(coreHandle, tokensOf([1]), 'a', 0, out, true)).code).toBe(NativeErrorCode.duplicateRequest);
    core.setWorkers([]);
    expect(thrown(() => fast.routeFast(coreHandle, tokensOf([1]), 'b', 0, out, true)).code).toBe(NativeErrorCode.noEligibleWorker);
  });
});

describe('bookingFast', () => {
  it('marks the first token and frees as the booking calls do: true the first time, by the exact id', () => {
    const { core, coreHandle } = fixture();
    const out = new Float64Array(DECISION_LEN);
    const long = `req-${'é'.repeat(200)}-${'😀'.repeat(30)}`; // past the inline buffer
    for (const id of ['a', long]) fast.routeFast(coreHandle, tokensOf([1, 5, 9]), id, 0, out, true);
    expect(core.totals().prefillTokens).toBeGreaterThan(0);
    expect(fast.bookingFast(coreHandle, 'a', 0, 0)).toBe(1);
    expect(fast.bookingFast(coreHandle, 'a', 0, 0)).toBe(0);
    expect(fast.bookingFast(coreHandle, long, 0, 0)).toBe(1);
    expect(core.totals().prefillTokens).toBe(0);
    expect(fast.bookingFast(coreHandle, 'A', 0, 1)).toBe(0); // ids are exact
    expect(fast.bookingFast(coreHandle, 'a', 0, 1)).toBe(1);
    expect(fast.bookingFast(coreHandle, 'a', 0, 1)).toBe(0);
    expect(core.free(long)).toBe(true);
    expect(core.markPrefillCompleted(long)).toBe(false);
    expect(core.stats()).toMatchObject({ booked: 2, freed: 2, active: 0 });
  });

  it('refuses bad arguments with their codes and changes no booking', () => {
    const { core, coreHandle } = fixture();
    fast.routeFast(coreHandle, tokensOf([1]), 'a', 0, new Float64Array(DECISION_LEN), true);
    const typeErrors = [
      () => fast.bookingFast(coreHandle, 5 as never, 0, 1),
      () => fast.bookingFast(coreHandle, 'a', '0' as never, 1),
      () => fast.bookingFast(coreHandle, 'a', 0, '1' as never),
      () => fast.bookingFast('0' as never, 'a', 0, 1),
      () => (fast.bookingFast as (...a: unknown[]) => number)(coreHandle, 'a', 0),
    ];
    for (const call of typeErrors) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.code).toBe(NativeErrorCode.invalidType);
    }
    for (const call of [() => fast.bookingFast(coreHandle, 'a', 0, 2), () => fast.bookingFast(2 ** 31, 'a', 0, 1)]) {
      const e = thrown(call);
      expect(e).toBeInstanceOf(RangeError);
      expect(e.code).toBe(NativeErrorCode.outOfRange);
    }
    expect(core.stats()).toMatchObject({ booked: 1, freed: 0, active: 1 });
    // The wrapper still refuses a non-string id with a TypeError before the addon sees it.
    expect(() => core.free(7 as never)).toThrow(TypeError);
    expect(() => core.markPrefillCompleted(undefined as never)).toThrow(TypeError);
    expect(core.free('a')).toBe(true);
  });
});
