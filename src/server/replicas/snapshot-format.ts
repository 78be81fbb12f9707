// The warm-start snapshot: both pools' native index dumps (KvIndexer.snapshot(), versioned and
// checksummed by the addon) with what a new replica needs to resume from them: per worker and dp
// rank, the KV event endpoint and the last event sequence number the dump holds, and the settings
// the dump is only valid under (model, block size, indexer mode, caps).
//
// Layout: magic "KVRWARM\0", format u32 (LE), header length u32 (LE), the header (msgpack), then
// each pool's index bytes in the order and lengths the header lists.
import { Packr } from 'msgpackr';
import type { PoolName } from '../../core/vocabulary.js';
import { POOL_NAMES } from '../../core/vocabulary.js';

export const WARM_FORMAT = 1;
const MAGIC = Buffer.from('KVRWARM\0', 'latin1');
const PREFIX = MAGIC.length + 8;

/** Where one worker's event streams stood when its blocks were dumped. */
export interface StreamPosition {
  worker: number;
  /** Per dp rank: the KV event endpoint the sequence numbers belong to. */
  endpoints: string[];
  /** Per dp rank: the last sequence number applied (everything up to it is in the dump); null: none yet. */
  lastSeq: Array<bigint | null>;
}

/** The settings a dump is valid under: a replica configured otherwise starts cold. */
export interface IndexSettings {
  model: string;
  blockSize: number;
  mode: string;
  lowerTiers: boolean;
  /** The events-mode cap (maxIndexedBlocks); null: none. */
  maxBlocks: number | null;
}

export interface WarmSnapshot {
  settings: IndexSettings;
  /** Date.now() of the capture on the replica that took it. */
  createdAt: number;
  replica: string;
  pools: Record<PoolName, { index: Uint8Array; streams: StreamPosition[] }>;
}

/** Bytes that are not a usable warm-start snapshot (damaged, another format). */
export class SnapshotRejected extends Error {
  override name = 'SnapshotRejected';
}

// Sequence numbers as decimal strings: msgpack's int64 would need the bigint options on both ends.
const packr = new Packr({ useRecords: false });

export function encodeWarmSnapshot(s: WarmSnapshot): Uint8Array {
  const header = packr.pack({
    settings: s.settings,
    createdAt: s.createdAt,
    replica: s.replica,
    pools: POOL_NAMES.map((p) => ({
      pool: p,
      bytes: s.pools[p].index.length,
      streams: s.pools[p].streams.map((st) => ({
        worker: st.worker,
        endpoints: st.endpoints,
        lastSeq: st.lastSeq.map((q) => (q === null ? null : q.toString())),
      })),
    })),
  });
  const prefix = Buffer.alloc(PREFIX);
  MAGIC.copy(prefix);
  prefix.writeUInt32LE(WARM_FORMAT, MAGIC.length);
  prefix.writeUInt32LE(header.length, MAGIC.length + 4);
  return Buffer.concat([prefix, header, ...POOL_NAMES.map((p) => s.pools[p].index)]);
}

/** Decodes the container; the index bytes are checked later, by KvIndexer.restore. */
export function decodeWarmSnapshot(bytes: Uint8Array): WarmSnapshot {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < PREFIX || !b.subarray(0, MAGIC.length).equals(MAGIC)) throw new SnapshotRejected('not a kvroute warm-start snapshot (bad magic)');
  const format = b.readUInt32LE(MAGIC.length);
  if (format !== WARM_FORMAT) throw new SnapshotRejected(`snapshot format ${format}, this router reads format ${WARM_FORMAT}`);
  const headerLength = b.readUInt32LE(MAGIC.length + 4);
  if (PREFIX + headerLength > b.length) throw new SnapshotRejected('truncated snapshot header');
  let h: unknown;
  try {
    h = packr.unpack(b.subarray(PREFIX, PREFIX + headerLength));
  } catch (err) {
    throw new SnapshotRejected(`unreadable snapshot header: ${(err as Error).message}`);
  }
  const header = expectRecord(h, 'header');
  const pools = {} as WarmSnapshot['pools'];
  let at = PREFIX + headerLength;
  const listed = header.pools;
  if (!Array.isArray(listed) || listed.length !== POOL_NAMES.length) throw new SnapshotRejected('the header must list both pools');
  for (const [i, entry] of listed.entries()) {
    const p = expectRecord(entry, `pools[${i}]`);
    if (p.pool !== POOL_NAMES[i]) throw new SnapshotRejected(`pools[${i}] must be ${POOL_NAMES[i]}`);
    const n = p.bytes;
    if (!Number.isSafeInteger(n) || (n as number) < 0 || at + (n as number) > b.length) throw new SnapshotRejected(`truncated ${POOL_NAMES[i]} index`);
    if (!Array.isArray(p.streams)) throw new SnapshotRejected(`pools[${i}].streams must be a list`);
    pools[POOL_NAMES[i]] = { index: b.subarray(at, at + (n as number)), streams: p.streams.map((st, j) => streamPosition(st, `pools[${i}].streams[${j}]`)) };
    at += n as number;
  }
  if (at !== b.length) throw new SnapshotRejected(`${b.length - at} trailing bytes after the indexes`);
  const createdAt = header.createdAt;
  if (typeof createdAt !== 'number' || !Number.isFinite(createdAt)) throw new SnapshotRejected('createdAt must be a number');
  if (typeof header.replica !== 'string') throw new SnapshotRejected('replica must be a string');
  return { settings: settings(header.settings), createdAt, replica: header.replica, pools };
}

/** Why a dump taken under `theirs` cannot serve a router configured as `ours`; undefined when it can. */
export function settingsMismatch(theirs: IndexSettings, ours: IndexSettings): string | undefined {
  const diffs = (Object.keys(ours) as Array<keyof IndexSettings>)
    .filter((k) => theirs[k] !== ours[k])
    .map((k) => `${k} ${String(theirs[k])} (here ${String(ours[k])})`);
  return diffs.length === 0 ? undefined : `taken with another configuration: ${diffs.join(', ')}`;
}

function settings(value: unknown): IndexSettings {
  const s = expectRecord(value, 'settings');
  const ok =
    typeof s.model === 'string' &&
    Number.isSafeInteger(s.blockSize) &&
    typeof s.mode === 'string' &&
    typeof s.lowerTiers === 'boolean' &&
    (s.maxBlocks === null || Number.isSafeInteger(s.maxBlocks));
  if (!ok) throw new SnapshotRejected('malformed settings in the snapshot header');
  return {
    model: s.model as string,
    blockSize: s.blockSize as number,
    mode: s.mode as string,
    lowerTiers: s.lowerTiers as boolean,
    maxBlocks: s.maxBlocks as number | null,
  };
}

function streamPosition(value: unknown, where: string): StreamPosition {
  const st = expectRecord(value, where);
  const { worker, endpoints, lastSeq } = st;
  const ok =
    Number.isSafeInteger(worker) &&
    Array.isArray(endpoints) &&
    endpoints.every((e) => typeof e === 'string') &&
    Array.isArray(lastSeq) &&
    lastSeq.length === endpoints.length &&
    lastSeq.every((q) => q === null || (typeof q === 'string' && /^\d{1,20}$/.test(q)));
  if (!ok) throw new SnapshotRejected(`malformed ${where}`);
  return { worker: worker as number, endpoints: endpoints as string[], lastSeq: (lastSeq as Array<string | null>).map((q) => (q === null ? null : BigInt(q))) };
}

function expectRecord(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SnapshotRejected(`${where} must be a map`);
  return value as Record<string, unknown>;
}
