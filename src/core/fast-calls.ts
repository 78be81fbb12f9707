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
}

export const fast = native as unknown as FastCalls;
