// A small MessagePack writer that produces exactly the bytes Python's msgspec produces for vLLM's
// KV event batches: integers in their smallest form with non-negative values unsigned (so a u64
// block hash >= 2^63 is `cf` + 8 bytes and one below 2^63 is not turned into a signed int64 as
// msgpackr would), floats always as float64, strings and containers in their smallest headers.
// msgpackr stays the decoder (tests and the router side); this writer only covers the value kinds
// the event encoders use.

/** Forces a float64 encoding even for integral values (msgspec writes Python floats as `cb`). */
export class Float64 {
  constructor(readonly value: number) {}
}

/** A map written in the given key order (plain objects work too, in insertion order). */
export type MsgpackMap = ReadonlyArray<readonly [string, MsgpackValue]>;

export type MsgpackValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Float64
  | Uint8Array
  | readonly MsgpackValue[]
  | { readonly [key: string]: MsgpackValue };

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const utf8 = new TextEncoder();

/** The MessagePack bytes of a constant value, to append with `raw` (no per-use encoding). */
export function preEncode(value: MsgpackValue): Buffer {
  return new MsgpackWriter(64).write(value).finish();
}

export class MsgpackWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  /** The bytes written so far, copied out; the writer can be reset and reused. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }

  reset(): this {
    this.pos = 0;
    return this;
  }

  write(value: MsgpackValue): this {
    if (value === null || value === undefined) return this.byte(0xc0);
    switch (typeof value) {
      case 'boolean':
        return this.byte(value ? 0xc3 : 0xc2);
      case 'number':
        if (!Number.isInteger(value)) return this.float64(value);
        // Token ids and small counters take the number path; only large values pay for BigInt.
        return value >= 0 && value < 0x100000000 ? this.uint32(value) : this.int(BigInt(value));
      case 'bigint':
        return this.int(value);
      case 'string':
        return this.string(value);
      default:
        break;
    }
    if (value instanceof Float64) return this.float64(value.value);
    if (value instanceof Uint8Array) return this.bin(value);
    if (Array.isArray(value)) {
      this.arrayHeader(value.length);
      for (const item of value) this.write(item as MsgpackValue);
      return this;
    }
    const entries = Object.entries(value as { [key: string]: MsgpackValue });
    this.mapHeader(entries.length);
    for (const [k, v] of entries) this.string(k).write(v);
    return this;
  }

  /** Writes a map whose keys keep the given order. */
  writeMap(entries: MsgpackMap): this {
    this.mapHeader(entries.length);
    for (const [k, v] of entries) this.string(k).write(v);
    return this;
  }

  arrayHeader(n: number): this {
    if (n < 16) return this.byte(0x90 | n);
    if (n < 0x10000) return this.byte(0xdc).u16(n);
    return this.byte(0xdd).u32(n);
  }

  mapHeader(n: number): this {
    if (n < 16) return this.byte(0x80 | n);
    if (n < 0x10000) return this.byte(0xde).u16(n);
    return this.byte(0xdf).u32(n);
  }

  float64(v: number): this {
    this.ensure(9);
    this.buf[this.pos++] = 0xcb;
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  int(v: bigint): this {
    if (v > U64_MAX || v < I64_MIN) throw new RangeError(`integer ${v} does not fit in 64 bits`);
    if (v >= 0n) {
      if (v < 0x80n) return this.byte(Number(v));
      if (v < 0x100n) return this.byte(0xcc).byte(Number(v));
      if (v < 0x10000n) return this.byte(0xcd).u16(Number(v));
      if (v < 0x100000000n) return this.byte(0xce).u32(Number(v));
      this.ensure(9);
      this.buf[this.pos++] = 0xcf;
      this.buf.writeBigUInt64BE(v, this.pos);
      this.pos += 8;
      return this;
    }
    if (v >= -32n) return this.byte(Number(v) & 0xff);
    if (v >= -0x80n) return this.byte(0xd0).byte(Number(v) & 0xff);
    if (v >= -0x8000n) {
      this.ensure(3);
      this.buf[this.pos++] = 0xd1;
      this.buf.writeInt16BE(Number(v), this.pos);
      this.pos += 2;
      return this;
    }
    if (v >= -0x80000000n) {
      this.ensure(5);
      this.buf[this.pos++] = 0xd2;
      this.buf.writeInt32BE(Number(v), this.pos);
      this.pos += 4;
      return this;
    }
    this.ensure(9);
    this.buf[this.pos++] = 0xd3;
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
    return this;
  }

  /** A non-negative integer below 2^32, in its smallest unsigned form. */
  uint32(v: number): this {
    if (!(Number.isInteger(v) && v >= 0 && v < 0x100000000)) throw new RangeError(`expected an integer in [0, 2^32), got ${v}`);
    if (v < 0x80) return this.byte(v);
    if (v < 0x100) return this.byte(0xcc).byte(v);
    if (v < 0x10000) return this.byte(0xcd).u16(v);
    return this.byte(0xce).u32(v);
  }

  string(s: string): this {
    const bytes = utf8.encode(s);
    const n = bytes.length;
    if (n < 32) this.byte(0xa0 | n);
    else if (n < 0x100) this.byte(0xd9).byte(n);
    else if (n < 0x10000) this.byte(0xda).u16(n);
    else this.byte(0xdb).u32(n);
    return this.raw(bytes);
  }

  bin(bytes: Uint8Array): this {
    const n = bytes.length;
    if (n < 0x100) this.byte(0xc4).byte(n);
    else if (n < 0x10000) this.byte(0xc5).u16(n);
    else this.byte(0xc6).u32(n);
    return this.raw(bytes);
  }

  /** Appends bytes that are already MessagePack (see `preEncode`). */
  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  private byte(b: number): this {
    this.ensure(1);
    this.buf[this.pos++] = b;
    return this;
  }

  private u16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  private u32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
}
