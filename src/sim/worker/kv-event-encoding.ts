// KV event batches as vLLM publishes them (PROTOCOLS.md section 2): the payload frame is
// `[ts float64, events, data_parallel_rank]`; each event is either a map with a "type" tag (current
// vLLM) or a positional array tagged by its first element (older vLLM). Field order and presence
// follow the byte examples of PROTOCOLS.md exactly.
import { MsgpackWriter } from './msgpack-writer.js';

export type EventEncoding = 'map' | 'array';
export const EVENT_ENCODINGS: readonly EventEncoding[] = ['map', 'array'];

/** The engine model's events (structurally the KvEvent of src/sim/engine). */
export type EncodableKvEvent =
  | {
      type: 'BlockStored';
      blockHashes: readonly bigint[];
      parentBlockHash: bigint | null;
      tokenIds: ArrayLike<number>;
      blockSize: number;
      loraName: string | null;
      medium: string;
    }
  | { type: 'BlockRemoved'; blockHashes: readonly bigint[]; medium: string }
  | { type: 'AllBlocksCleared' };

/** vLLM's KV cache spec of a plain (non-hybrid) model: every block belongs to group 0. */
const GROUP_IDX = 0;
const KV_CACHE_SPEC_KIND = 'full_attention';

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
        w.string('type').string('BlockStored');
        w.string('block_hashes');
        writeHashes(w, e.blockHashes);
        w.string('parent_block_hash').write(e.parentBlockHash);
        w.string('token_ids');
        writeTokens(w, e.tokenIds);
        w.string('block_size').uint32(e.blockSize);
        w.string('lora_id').write(this.loraId(e.loraName));
        w.string('medium').string(e.medium);
        w.string('lora_name').write(e.loraName);
        w.string('group_idx').uint32(GROUP_IDX);
        w.string('kv_cache_spec_kind').string(KV_CACHE_SPEC_KIND);
        return;
      case 'BlockRemoved':
        w.mapHeader(4);
        w.string('type').string('BlockRemoved');
        w.string('block_hashes');
        writeHashes(w, e.blockHashes);
        w.string('medium').string(e.medium);
        w.string('group_idx').uint32(GROUP_IDX);
        return;
      case 'AllBlocksCleared':
        w.mapHeader(1).string('type').string('AllBlocksCleared');
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
        w.arrayHeader(withLora ? 8 : 7).string('BlockStored');
        writeHashes(w, e.blockHashes);
        w.write(e.parentBlockHash);
        writeTokens(w, e.tokenIds);
        w.uint32(e.blockSize).write(this.loraId(e.loraName)).string(e.medium);
        if (withLora) w.string(e.loraName as string);
        return;
      }
      case 'BlockRemoved':
        w.arrayHeader(3).string('BlockRemoved');
        writeHashes(w, e.blockHashes);
        w.string(e.medium);
        return;
      case 'AllBlocksCleared':
        w.arrayHeader(1).string('AllBlocksCleared');
        return;
      default:
        throw new TypeError(`unknown KV event type ${String((e as { type?: unknown }).type)}`);
    }
  }
}

function writeHashes(w: MsgpackWriter, hashes: readonly bigint[]): void {
  w.arrayHeader(hashes.length);
  for (const h of hashes) w.int(h);
}

function writeTokens(w: MsgpackWriter, tokens: ArrayLike<number>): void {
  w.arrayHeader(tokens.length);
  for (let i = 0; i < tokens.length; i++) w.uint32(tokens[i]);
}
