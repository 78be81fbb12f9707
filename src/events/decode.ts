// Decodes one KV event payload frame (msgpack, PROTOCOLS.md section 2) into a normalized batch.
// Every encoding the engines have used is accepted: the batch as a 3-element array (2 in old
// SGLang) or a map with `data_parallel_rank` (alias `dp_rank`); each event as a tagged positional
// array (older vLLM) or a map with a "type" key whose default-valued fields may be absent (newer).
// Unknown fields and extra trailing elements are ignored, unknown event types skipped and counted.
// A malformed payload yields a DecodeError value: decoding never throws for bad bytes.
import { Unpackr } from 'msgpackr';

export interface StoredEvent {
  kind: 'stored';
  /** The engine's own hashes: opaque keys, used only to resolve parents and removals. */
  blockHashes: BigUint64Array;
  parentHash: bigint | null;
  tokenIds: Uint32Array;
  blockSize: number;
  loraName: string | null;
  /** null when the engine did not say (counts as GPU). */
  medium: string | null;
  /** Per block, the multimodal digests found in vLLM's extra_keys (absent: no multimodal block). */
  mmExtraKeys?: Array<string[] | null>;
}

export interface RemovedEvent {
  kind: 'removed';
  blockHashes: BigUint64Array;
  medium: string | null;
}

export interface ClearedEvent {
  kind: 'cleared';
}

export type KvCacheEvent = StoredEvent | RemovedEvent | ClearedEvent;

export interface DecodedBatch {
  /** The engine's timestamp (seconds since the epoch, as Python's time.time()). */
  ts: number;
  /** The publisher's data-parallel rank when the payload carries one. */
  dpRank: number | null;
  events: KvCacheEvent[];
  /** Events of a type this decoder does not know: skipped. */
  skippedUnknown: number;
  /** Events of a secondary KV cache group (hybrid models: sliding window, mamba...): skipped. */
  skippedOtherGroup: number;
}

export class DecodeError extends Error {
  override name = 'DecodeError';
  readonly code = 'kv_event_decode_error';
  /** Where in the payload the problem is, e.g. "events[2].token_ids[5]". */
  readonly path: string;
  constructor(message: string, path = '', options?: { cause?: unknown }) {
    super(path ? `${path}: ${message}` : message, options);
    this.path = path;
  }
}

export type DecodeResult = { ok: true; batch: DecodedBatch } | { ok: false; error: DecodeError };

// Maps decode as Map (no prototype games with keys like "__proto__"); 64-bit integers as bigint so
// uint64 hashes above 2^53 stay exact.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: 'bigint' });

const U32_MAX = 0xffff_ffff;
const MAX_DP_RANK = 0xffff;

/** KV cache spec kinds of a model's secondary groups: their blocks are not prefix-cache blocks. */
const SECONDARY_SPEC_KINDS = new Set(['sliding_window', 'sliding_window_mla', 'mamba', 'chunked_local_attention', 'encoder_only_attention', 'cross_attention']);

export function decodeEventBatch(payload: Uint8Array): DecodeResult {
  if (!(payload instanceof Uint8Array)) {
    throw new TypeError(`payload must be a Uint8Array, got ${payload === null ? 'null' : typeof payload}`);
  }
  if (payload.length === 0) return fail(new DecodeError('empty payload'));
  let raw: unknown;
  try {
    raw = unpackr.unpack(payload);
  } catch (err) {
    return fail(new DecodeError(`invalid msgpack: ${(err as Error)?.message ?? String(err)}`, '', { cause: err }));
  }
  try {
    return { ok: true, batch: readBatch(raw) };
  } catch (err) {
    if (err instanceof DecodeError) return fail(err);
    return fail(new DecodeError(`unexpected decoder failure: ${(err as Error)?.message ?? String(err)}`, '', { cause: err }));
  }
}

function fail(error: DecodeError): DecodeResult {
  return { ok: false, error };
}

function readBatch(raw: unknown): DecodedBatch {
  let ts: unknown;
  let events: unknown;
  let dpRank: unknown = null;
  if (Array.isArray(raw)) {
    if (raw.length < 2) throw new DecodeError(`a batch array needs [ts, events(, dp_rank)], got ${raw.length} element(s)`);
    [ts, events] = raw;
    if (raw.length >= 3) dpRank = raw[2];
  } else if (raw instanceof Map) {
    ts = raw.get('ts');
    events = raw.get('events');
    dpRank = raw.has('data_parallel_rank') ? raw.get('data_parallel_rank') : (raw.get('dp_rank') ?? null);
  } else {
    throw new DecodeError(`a batch must be an array or a map, got ${kindOf(raw)}`);
  }
  const batch: DecodedBatch = {
    ts: readTimestamp(ts),
    dpRank: readDpRank(dpRank),
    events: [],
    skippedUnknown: 0,
    skippedOtherGroup: 0,
  };
  if (!Array.isArray(events)) throw new DecodeError(`must be a list, got ${kindOf(events)}`, 'events');
  for (let i = 0; i < events.length; i++) {
    const outcome = readEvent(events[i], `events[${i}]`);
    if (outcome === UNKNOWN) batch.skippedUnknown++;
    else if (outcome === OTHER_GROUP) batch.skippedOtherGroup++;
    else batch.events.push(outcome);
  }
  return batch;
}

function readTimestamp(ts: unknown): number {
  if (typeof ts === 'number' && Number.isFinite(ts)) return ts;
  if (typeof ts === 'bigint') return Number(ts);
  throw new DecodeError(`must be a finite number, got ${kindOf(ts)}`, 'ts');
}

function readDpRank(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_DP_RANK) {
    throw new DecodeError(`must be nil or an integer in [0, ${MAX_DP_RANK}], got ${kindOf(v)}`, 'data_parallel_rank');
  }
  return n;
}

const UNKNOWN = Symbol('unknown event type');
const OTHER_GROUP = Symbol('secondary KV cache group');

/** Field access common to both event encodings: by position in an array, by name in a map. */
type FieldReader = (position: number, name: string) => unknown;

function readEvent(raw: unknown, path: string): KvCacheEvent | typeof UNKNOWN | typeof OTHER_GROUP {
  let type: unknown;
  let field: FieldReader;
  if (Array.isArray(raw)) {
    type = raw[0];
    // Trailing fields equal to their default are omitted (msgspec omit_defaults): absent = nil.
    field = (position) => (position < raw.length ? raw[position] : null);
  } else if (raw instanceof Map) {
    type = raw.get('type');
    field = (_position, name) => raw.get(name) ?? null;
  } else {
    throw new DecodeError(`an event must be a tagged array or a map, got ${kindOf(raw)}`, path);
  }
  if (typeof type !== 'string') throw new DecodeError(`the event type tag must be a string, got ${kindOf(type)}`, path);
  switch (type) {
    case 'BlockStored': {
      const blockHashes = readHashList(field(1, 'block_hashes'), `${path}.block_hashes`);
      const parent = field(2, 'parent_block_hash');
      const tokenIds = readTokenIds(field(3, 'token_ids'), `${path}.token_ids`);
      const blockSize = readBlockSize(field(4, 'block_size'), `${path}.block_size`);
      // [5] lora_id: deprecated, superseded by lora_name; ignored.
      const medium = readOptionalString(field(6, 'medium'), `${path}.medium`);
      const loraName = readOptionalString(field(7, 'lora_name'), `${path}.lora_name`);
      const mmExtraKeys = readExtraKeys(field(8, 'extra_keys'), `${path}.extra_keys`);
      if (isSecondaryGroup(field(9, 'group_idx'), field(10, 'kv_cache_spec_kind'))) return OTHER_GROUP;
      const event: StoredEvent = {
        kind: 'stored',
        blockHashes,
        parentHash: parent === null ? null : readHash(parent, `${path}.parent_block_hash`),
        tokenIds,
        blockSize,
        // Section 1: an empty LoRA name counts as unset.
        loraName: loraName === '' ? null : loraName,
        medium,
      };
      if (mmExtraKeys) event.mmExtraKeys = mmExtraKeys;
      return event;
    }
    case 'BlockRemoved': {
      const blockHashes = readHashList(field(1, 'block_hashes'), `${path}.block_hashes`);
      const medium = readOptionalString(field(2, 'medium'), `${path}.medium`);
      if (isSecondaryGroup(field(3, 'group_idx'), field(4, 'kv_cache_spec_kind'))) return OTHER_GROUP;
      return { kind: 'removed', blockHashes, medium };
    }
    case 'AllBlocksCleared':
      return { kind: 'cleared' };
    default:
      return UNKNOWN;
  }
}

/**
 * Hybrid models publish one event stream per KV cache group; only the main attention group (0)
 * holds prefix-cache blocks the router can match (as Dynamo filters them). Values of the wrong
 * type are treated as absent: these trailing fields are hints, not structure.
 */
function isSecondaryGroup(groupIdx: unknown, specKind: unknown): boolean {
  if (typeof specKind === 'string' && SECONDARY_SPEC_KINDS.has(specKind)) return true;
  if (typeof groupIdx === 'number' || typeof groupIdx === 'bigint') return groupIdx !== 0;
  return false;
}

/** An engine hash as a u64: ints keep their 64 bits (int64 negatives wrap), bytes fold to their last 8. */
export function readHash(v: unknown, path: string): bigint {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new DecodeError(`a hash must be an integer or bytes, got ${v}`, path);
    return BigInt.asUintN(64, BigInt(v));
  }
  if (typeof v === 'bigint') return BigInt.asUintN(64, v);
  if (v instanceof Uint8Array) {
    if (v.length === 0) throw new DecodeError('a bytes hash must not be empty', path);
    return foldDigest(v);
  }
  throw new DecodeError(`a hash must be an integer or bytes, got ${kindOf(v)}`, path);
}

/** The last (at most) 8 bytes of a digest, read big-endian. */
export function foldDigest(bytes: Uint8Array): bigint {
  let h = 0n;
  for (let i = Math.max(0, bytes.length - 8); i < bytes.length; i++) h = (h << 8n) | BigInt(bytes[i]);
  return h;
}

function readHashList(v: unknown, path: string): BigUint64Array {
  if (!Array.isArray(v)) throw new DecodeError(`must be a list of hashes, got ${kindOf(v)}`, path);
  const out = new BigUint64Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = readHash(v[i], `${path}[${i}]`);
  return out;
}

function readTokenIds(v: unknown, path: string): Uint32Array {
  if (!Array.isArray(v)) throw new DecodeError(`must be a list of token ids, got ${kindOf(v)}`, path);
  const out = new Uint32Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const t = v[i];
    if (typeof t === 'number' && t >>> 0 === t) out[i] = t;
    else if (typeof t === 'bigint' && t >= 0n && t <= BigInt(U32_MAX)) out[i] = Number(t);
    else throw new DecodeError(`a token id must be an integer in [0, 2^32), got ${kindOf(t)}`, `${path}[${i}]`);
  }
  return out;
}

function readBlockSize(v: unknown, path: string): number {
  const n = typeof v === 'bigint' && v <= BigInt(U32_MAX) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > U32_MAX) {
    throw new DecodeError(`must be a positive integer, got ${kindOf(v)}`, path);
  }
  return n;
}

function readOptionalString(v: unknown, path: string): string | null {
  if (v === null) return null;
  if (typeof v !== 'string') throw new DecodeError(`must be a string or nil, got ${kindOf(v)}`, path);
  return v;
}

/**
 * vLLM's extra_keys: one entry per block, nil or a list mixing multimodal identifiers (a 64-hex
 * digest, alone or as [digest, offset]) with LoRA names, cache salts and other metadata. Only the
 * multimodal digests change a block's hash (section 1); everything else is ignored.
 */
function readExtraKeys(v: unknown, path: string): Array<string[] | null> | undefined {
  if (v === null) return undefined;
  if (!Array.isArray(v)) throw new DecodeError(`must be a list (one entry per block) or nil, got ${kindOf(v)}`, path);
  let any = false;
  const perBlock = v.map((keys: unknown, i) => {
    if (keys === null) return null;
    if (!Array.isArray(keys)) throw new DecodeError(`must be a list or nil, got ${kindOf(keys)}`, `${path}[${i}]`);
    const digests: string[] = [];
    for (const key of keys) {
      const id = Array.isArray(key) ? key[0] : key;
      if (typeof id === 'string' && isMultimodalDigest(id)) digests.push(id);
    }
    if (digests.length === 0) return null;
    any = true;
    return digests;
  });
  return any ? perBlock : undefined;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;
function isMultimodalDigest(s: string): boolean {
  return s.length === 64 && HEX64.test(s);
}

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (v instanceof Map) return 'a map';
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  return `a ${(v as object).constructor?.name ?? typeof v}`;
}
