// Argument checks shared by the src/core wrappers and every other layer: a clear TypeError or RangeError before any
// value reaches the addon.

export const MAX_BLOCK_SIZE = 1 << 16;
const U64_MAX = (1n << 64n) - 1n;

export function expectUint32Array(value: unknown, name: string): Uint32Array {
  if (!(value instanceof Uint32Array)) {
    throw new TypeError(`${name} must be a Uint32Array, got ${describe(value)}`);
  }
  return value;
}

/** 1 to 256 visible ASCII characters: the shape of request and session ids (header values, map keys). */
export function isShortVisibleAscii(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]{1,256}$/.test(value);
}

export function expectUint8Array(value: unknown, name: string): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new TypeError(`${name} must be a Uint8Array, got ${describe(value)}`);
  }
  return value;
}

export function expectBigUint64Array(value: unknown, name: string): BigUint64Array {
  if (!(value instanceof BigUint64Array)) {
    throw new TypeError(`${name} must be a BigUint64Array, got ${describe(value)}`);
  }
  return value;
}

/** An integer in [min, max]; NaN, fractions and non-numbers are refused. */
export function expectInteger(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

/** A block size in tokens: the one check of every public edge that takes one. */
export function expectBlockSize(value: unknown, name = 'blockSize'): number {
  return expectInteger(value, name, 1, MAX_BLOCK_SIZE);
}

/** Worker ids are integers below 2^53 (exact in a double). */
export function expectWorkerId(value: unknown, name = 'worker'): number {
  return expectInteger(value, name, 0, Number.MAX_SAFE_INTEGER);
}

export function expectDpRank(value: unknown, name = 'dpRank'): number {
  return expectInteger(value, name, 0, 0xffff);
}

export function expectU64(value: unknown, name: string): bigint {
  if (typeof value !== 'bigint') throw new TypeError(`${name} must be a bigint, got ${describe(value)}`);
  if (value < 0n || value > U64_MAX) throw new RangeError(`${name} must fit in 64 unsigned bits, got ${value}`);
  return value;
}

export function expectOptionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string, got ${describe(value)}`);
  return value;
}

/** An optional boolean flag: false when absent. */
export function expectOptionalBoolean(value: unknown, name: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

export function expectObject(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`${name} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  return typeof value === 'object' ? `a ${(value as object).constructor?.name ?? 'object'}` : `${typeof value} ${String(value)}`;
}
