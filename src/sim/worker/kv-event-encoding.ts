// KV event batches as vLLM publishes them (PROTOCOLS.md section 2): the payload frame is
// `[ts float64, events, data_parallel_rank]`; each event is either a map with a "type" tag (current
// vLLM) or a positional array tagged by its first element (older vLLM). Field order and presence
// follow the byte examples of PROTOCOLS.md exactly.
import { MsgpackWriter, preEncode } from './msgpack-writer.js';

export type EventEncoding = 'map' | 'array';
export const EVENT_ENCODINGS: readonly EventEncoding[] = ['map', 'array'];

/** The engine model's events (structurally the KvEvent of src/sim/engine). */
export type EncodableKvEvent =
  | {
      type: 'BlockStored';
      blockHashes: ArrayLike<bigint>;
      parentBlockHash: bigint | null;
      tokenIds: ArrayLike<number>;
      blockSize: number;
      loraName: string | null;
      medium: string;
    }
  | { type: 'BlockRemoved'; blockHashes: ArrayLike<bigint>; medium: string }
  | { type: 'AllBlocksCleared' };

/** vLLM's KV cache spec of a plain (non-hybrid) model: every block belongs to group 0. */
const GROUP_IDX = 0;
const KV_CACHE_SPEC_KIND = 'full_attention';

// Keys and tags are the same in every event: encoded once.
const PRE_ENCODED = new Map(
  [
    'type',
    'BlockStored',
    'BlockRemoved',
    'AllBlocksCleared',
    'block_hashes',
    'parent_block_hash',
    'token_ids',
    'block_size',
    'lora_id',
    'medium',
    'lora_name',
    'group_idx',
    'kv_cache_spec_kind',
    KV_CACHE_SPEC_KIND,
    'GPU',
  ].map((k) => [k, preEncode(k)]),
);
const str = (w: MsgpackWriter, s: string): void => {
  const pre = PRE_ENCODED.get(s);
  if (pre) w.raw(pre);
  else w.string(s);
};

export class KvEventBatchEncoder {
  private readonly writer = new MsgpackWriter(4096);
  /** vLLM numbers LoRA adapters from 1 in the order it loads them; lora_id is that number. */
  private readonly loraIds = new Map<string, number>();

  constructor(readonly encoding: EventEncoding) {
    if (encoding !== 'map' && encoding !== 'array') {
      throw new RangeError(`eventEncoding must be 'map' or 'array', got ${String(encoding)}`);
    }
  }

  /** One batch payload: `tsSeconds` is wall-clock seconds (Python's time.time()). */
  encode(tsSeconds: number, events: readonly EncodableKvEvent[], dpRank: number): Buffer {
    const w = this.writer.reset();
    w.arrayHeader(3).float64(tsSeconds);
    w.arrayHeader(events.length);
    for (const e of events) {
      if (this.encoding === 'map') this.writeMapEvent(e);
      else this.writeArrayEvent(e);
    }
    w.uint32(dpRank);
    return w.finish();
  }

  private loraId(name: string | null): number | null {
    if (name === null) return null;
    let id = this.loraIds.get(name);
    if (id === undefined) {
      id = this.loraIds.size + 1;
      this.loraIds.set(name, id);
    }
    return id;
  }

  private writeMapEvent(e: EncodableKvEvent): void {
    const w = this.writer;
    switch (e.type) {
      case 'BlockStored':
        w.mapHeader(10);
        str(w, 'type');
        str(w, 'BlockStored');
        str(w, 'block_hashes');
        writeHashes(w, e.blockHashes);
        str(w, 'parent_block_hash');
        w.write(e.parentBlockHash);
        str(w, 'token_ids');
        writeTokens(w, e.tokenIds);
        str(w, 'block_size');
        w.uint32(e.blockSize);
        str(w, 'lora_id');
        w.write(this.loraId(e.loraName));
        str(w, 'medium');
        str(w, e.medium);
        str(w, 'lora_name');
        w.write(e.loraName);
        str(w, 'group_idx');
        w.uint32(GROUP_IDX);
        str(w, 'kv_cache_spec_kind');
        str(w, KV_CACHE_SPEC_KIND);
        return;
      case 'BlockRemoved':
        w.mapHeader(4);
        str(w, 'type');
        str(w, 'BlockRemoved');
        str(w, 'block_hashes');
        writeHashes(w, e.blockHashes);
        str(w, 'medium');
        str(w, e.medium);
        str(w, 'group_idx');
        w.uint32(GROUP_IDX);
        return;
      case 'AllBlocksCleared':
        w.mapHeader(1);
        str(w, 'type');
        str(w, 'AllBlocksCleared');
        return;
      default:
        throw new TypeError(`unknown KV event type ${String((e as { type?: unknown }).type)}`);
    }
  }

  private writeArrayEvent(e: EncodableKvEvent): void {
    const w = this.writer;
    switch (e.type) {
      case 'BlockStored': {
        // msgspec's omit_defaults drops a trailing lora_name that is None.
        const withLora = e.loraName !== null;
        w.arrayHeader(withLora ? 8 : 7);
        str(w, 'BlockStored');
        writeHashes(w, e.blockHashes);
        w.write(e.parentBlockHash);
        writeTokens(w, e.tokenIds);
        w.uint32(e.blockSize).write(this.loraId(e.loraName));
        str(w, e.medium);
        if (withLora) w.string(e.loraName as string);
        return;
      }
      case 'BlockRemoved':
        w.arrayHeader(3);
        str(w, 'BlockRemoved');
        writeHashes(w, e.blockHashes);
        str(w, e.medium);
        return;
      case 'AllBlocksCleared':
        w.arrayHeader(1);
        str(w, 'AllBlocksCleared');
        return;
      default:
        throw new TypeError(`unknown KV event type ${String((e as { type?: unknown }).type)}`);
    }
  }
}

function writeHashes(w: MsgpackWriter, hashes: ArrayLike<bigint>): void {
  w.arrayHeader(hashes.length);
  for (let i = 0; i < hashes.length; i++) w.int(hashes[i]);
}

function writeTokens(w: MsgpackWriter, tokens: ArrayLike<number>): void {
  w.arrayHeader(tokens.length);
  for (let i = 0; i < tokens.length; i++) w.uint32(tokens[i]);
}
