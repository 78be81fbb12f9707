// The addon's hand-written entry points (native/src/bindings/fast.rs): the calls on the request
// path, which skip napi-derive's per-call glue. They are not in the generated binding.d.ts, so
// their types are declared here.
import { native } from './binding.js';

export interface FastCalls {
  /** Matches against the tree `handle`; [worker low 32 bits, worker high bits, dpRank, blocks]
   * per match into `out` (if it fits), best first. Returns the number of matches times 2, plus
   * 1 when some worker id is 2^31 or more (then its high int must be read). `nowMs` (default 0)
   * matters in approximate mode only; `earlyExit` defaults to false. */
  findMatchesFast(handle: number, localHashes: BigUint64Array, out: Int32Array, nowMs?: number, earlyExit?: boolean): number;
  /** NativeRoutingCore `handle`'s route (book true) or query (false) for a request without a
   * seed or options; the decision into `out` (bindings/routing.rs). Returns the candidates
   * explained. */
  routeFast(handle: number, tokens: Uint32Array, requestId: string, nowMs: number, out: Float64Array, book: boolean): number;
  /** NativeRoutingCore `handle`'s markPrefillCompleted (op BOOKING_MARK_PREFILL_COMPLETED) or
   * free (op BOOKING_FREE): 1 when it changed the booking, else 0. */
  bookingFast(handle: number, requestId: string, nowMs: number, op: number): number;
  /** KvIndexer.applyStored of the device tier without a LoRA or multimodal content, on the tree
   * `handle` (bindings/fast_events.rs): `parent` empty for a root block, else its first entry;
   * worker below 2^32. Returns 1 when applied, 0 when refused. */
  applyStoredFast(
    handle: number,
    worker: number,
    dpRank: number,
    blockHashes: BigUint64Array,
    tokenIds: Uint32Array,
    parent: BigUint64Array,
    nowMs: number,
  ): number;
  /** KvIndexer.applyRemoved of the device tier on the tree `handle`; returns the blocks removed. */
  applyRemovedFast(handle: number, worker: number, dpRank: number, blockHashes: BigUint64Array, nowMs: number): number;
}

export const fast = native as unknown as FastCalls;

/** bookingFast's operations (native/src/bindings/fast.rs). */
export const BOOKING_MARK_PREFILL_COMPLETED = 0;
export const BOOKING_FREE = 1;
