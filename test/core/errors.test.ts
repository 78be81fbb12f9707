// The addon's errors cross the boundary by code: TypeScript maps codes, never messages.
import { describe, expect, it } from 'vitest';
import { native } from '../../src/core/binding.js';
import { NativeErrorCode, callNative, nativeErrorCode, translateNativeError } from '../../src/core/errors.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { BackpressureError, DuplicateRequestError, type RoutingError, translateRoutingError } from '../../src/core/routing-errors.js';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('native error codes', () => {
  it('the addon and TypeScript know the same codes', () => {
    expect(native.errorCodes().sort()).toEqual(Object.values(NativeErrorCode).sort());
  });

  it('maps by code only', () => {
    const range = translateNativeError(coded('blockSize must be positive', NativeErrorCode.outOfRange));
    expect(range).toBeInstanceOf(RangeError);
    expect((range as RangeError).message).toBe('blockSize must be positive');
    expect(nativeErrorCode(range)).toBe(NativeErrorCode.outOfRange);
    expect(translateNativeError(coded('x', NativeErrorCode.invalidType))).toBeInstanceOf(TypeError);
    // A message that merely looks like a range failure stays what it is.
    const lookalike = new Error('RangeError: not really');
    expect(translateNativeError(lookalike)).toBe(lookalike);
    const busy = coded('busy', NativeErrorCode.busy);
    expect(translateNativeError(busy)).toBe(busy);
  });

  it('a real addon failure arrives with its code', () => {
    let thrown: unknown;
    try {
      callNative(() => new native.NativeIndexer({ blockSize: 4, mode: 'nope', ttlMs: 1, approxMaxBlocks: 1, pruneFraction: 1 }));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(RangeError);
    expect(nativeErrorCode(thrown)).toBe(NativeErrorCode.outOfRange);
    const ix = new KvIndexer({ blockSize: 4 });
    expect(() => ix.applyStored(1, 0, null, BigUint64Array.of(1n), Uint32Array.of(1, 2, 3, 4), { mmHashes: [['a'], ['b']] })).toThrow(RangeError);
  });

  it('routing refusals become their RoutingError classes', () => {
    const bp = translateRoutingError(coded('queue full', NativeErrorCode.backpressure), () => 250);
    expect(bp).toBeInstanceOf(BackpressureError);
    expect((bp as BackpressureError).retryAfterMs).toBe(250);
    expect(translateRoutingError(coded('dup', NativeErrorCode.duplicateRequest), () => 0)).toBeInstanceOf(DuplicateRequestError);
    expect((translateRoutingError(coded('dup', NativeErrorCode.duplicateRequest), () => 0) as RoutingError).code).toBe('duplicate_request_id');
    const other = coded('x', NativeErrorCode.busy);
    expect(translateRoutingError(other, () => 0)).toBe(other);
  });
});
