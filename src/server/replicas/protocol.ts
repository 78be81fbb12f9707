// The messages router replicas exchange over NATS (msgpack): booking batches on
// `kvroute.<cluster>.bookings`, heartbeats on `kvroute.<cluster>.heartbeats`. Events are positional
// arrays so a batch of 256 stays small. Decoding checks every field: a malformed message from the
// wire yields null (counted by the caller), never an exception and never a half-applied batch.
import { Packr } from 'msgpackr';
import type { RemoteBooking } from '../../core/routing-core.js';
import type { PoolName } from '../../core/vocabulary.js';

export const PROTOCOL_VERSION = 1;

export const POOL_CODES: Record<PoolName, number> = { prefill: 0, decode: 1 };
export const POOLS_BY_CODE: readonly PoolName[] = ['prefill', 'decode'];

/** A booking made on the origin replica: what the others need to book the same load. */
export type BookEvent = RemoteBooking & { kind: 'book'; pool: PoolName };

export interface PrefillDoneEvent {
  kind: 'prefill_done';
  pool: PoolName;
  requestId: string;
}

export interface FreeEvent {
  kind: 'free';
  pool: PoolName;
  requestId: string;
}

export type BookingEvent = BookEvent | PrefillDoneEvent | FreeEvent;

/** Fields every message carries. */
interface Envelope {
  /** The sender's replica id. */
  from: string;
  /** Random per process: a replica restarted under the same id has a new one. */
  epoch: string;
  /** The sender's clock (ms since the epoch) when it sent the message: sync lag = apply time - sentAt. */
  sentAt: number;
}

export interface BookingBatch extends Envelope {
  /** Per (from, epoch), +1 per batch: a jump means batches were lost. */
  seq: number;
  /** An announcement of all the sender's bookings: receivers drop what they hold of it first. */
  reset: boolean;
  /** The sender asks every other replica to announce all its bookings (it joined or lost messages). */
  ask: boolean;
  events: BookingEvent[];
}

export interface Heartbeat extends Envelope {
  /** The sender's own bookings now (for the logs and a consistency check). */
  bookings: number;
}

const BOOK = 0;
const PREFILL_DONE = 1;
const FREE = 2;

// Plain maps and arrays (no msgpackr records): any msgpack reader can follow the wire.
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

export function encodeBatch(b: BookingBatch): Uint8Array {
  return packr.pack({
    v: PROTOCOL_VERSION,
    from: b.from,
    epoch: b.epoch,
    sentAt: b.sentAt,
    seq: b.seq,
    reset: b.reset,
    ask: b.ask,
    events: b.events.map(eventTuple),
  });
}

export function encodeHeartbeat(h: Heartbeat): Uint8Array {
  return packr.pack({ v: PROTOCOL_VERSION, from: h.from, epoch: h.epoch, sentAt: h.sentAt, bookings: h.bookings });
}

function eventTuple(e: BookingEvent): unknown[] {
  const pool = POOL_CODES[e.pool];
  switch (e.kind) {
    case 'book':
      return [BOOK, pool, e.requestId, e.worker, e.dpRank, e.promptTokens, e.overlapBlocks, e.expectedOutputTokens ?? null, e.hashes];
    case 'prefill_done':
      return [PREFILL_DONE, pool, e.requestId];
    case 'free':
      return [FREE, pool, e.requestId];
  }
}

/** The batch in `bytes`, or null when it is not one of this protocol version. */
export function decodeBatch(bytes: Uint8Array): BookingBatch | null {
  const m = unpacked(bytes);
  if (!m || !isEnvelope(m) || !isCount(m.seq) || typeof m.reset !== 'boolean' || typeof m.ask !== 'boolean' || !Array.isArray(m.events)) return null;
  const events: BookingEvent[] = [];
  for (const t of m.events) {
    const e = decodeEvent(t);
    if (!e) return null;
    events.push(e);
  }
  return { from: m.from as string, epoch: m.epoch as string, sentAt: m.sentAt as number, seq: m.seq, reset: m.reset, ask: m.ask, events };
}

export function decodeHeartbeat(bytes: Uint8Array): Heartbeat | null {
  const m = unpacked(bytes);
  if (!m || !isEnvelope(m) || !isCount(m.bookings)) return null;
  return { from: m.from as string, epoch: m.epoch as string, sentAt: m.sentAt as number, bookings: m.bookings };
}

function decodeEvent(t: unknown): BookingEvent | null {
  if (!Array.isArray(t) || t.length < 3) return null;
  const [kind, poolCode, requestId] = t;
  const pool = POOLS_BY_CODE[poolCode as number];
  if (pool === undefined || typeof requestId !== 'string') return null;
  if (kind === PREFILL_DONE) return { kind: 'prefill_done', pool, requestId };
  if (kind === FREE) return { kind: 'free', pool, requestId };
  if (kind !== BOOK || t.length < 9) return null;
  const [, , , worker, dpRank, promptTokens, overlapBlocks, expected, hashes] = t;
  if (!isCount(worker) || !isCount(dpRank) || !isCount(promptTokens) || !isCount(overlapBlocks)) return null;
  if (expected !== null && !isCount(expected)) return null;
  if (!(hashes instanceof Uint8Array) || hashes.length % 8 !== 0) return null;
  // msgpackr hands out Buffers: a plain view of the same bytes.
  const bytes = new Uint8Array(hashes.buffer, hashes.byteOffset, hashes.length);
  const e: BookEvent = { kind: 'book', pool, requestId, worker, dpRank, promptTokens, overlapBlocks, hashes: bytes };
  if (expected !== null) e.expectedOutputTokens = expected as number;
  return e;
}

function unpacked(bytes: Uint8Array): Record<string, unknown> | null {
  let m: unknown;
  try {
    m = packr.unpack(bytes);
  } catch {
    return null;
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return null;
  return (m as Record<string, unknown>).v === PROTOCOL_VERSION ? (m as Record<string, unknown>) : null;
}

function isEnvelope(m: Record<string, unknown>): boolean {
  return typeof m.from === 'string' && m.from !== '' && typeof m.epoch === 'string' && typeof m.sentAt === 'number' && Number.isFinite(m.sentAt);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
