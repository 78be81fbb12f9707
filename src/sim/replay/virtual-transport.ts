// The leg transport of trace replay: the router's legs go to simulated engines (EngineModel, in
// VirtualPools) in virtual time instead of over HTTP, and are answered as the simulated workers
// answer them (src/sim/worker): completions JSON or SSE chunks, each engine kind's handoff fields,
// a finished prefill's KV held until the decode leg pulls it (kv-rendezvous.ts), the decode engine
// receiving the prompt's KV by transfer. vLLM and TensorRT-LLM prefill first and hand the
// transfer state over in the answer; SGLang runs both legs at once, the decode waiting at the
// prefill worker's bootstrap room.
//
// Faults: failNext(worker, n) answers the next n legs with a 500 (the simulated workers' fail_next);
// setDown(worker, ...) makes a worker refuse legs before accepting them (connection refused: the
// router may fail them over), at once or over a span of virtual time. Legs already running on a
// worker that goes down run on.
//
// What the router observes of a stream is its first token, its end and its usage, so a streamed
// leg answers in at most two batches: the first token when the engine produced it, then one
// chunk for the remaining tokens, the usage chunk and [DONE] when it finished. deliver() says
// whether a step gave the router anything to see, so the replay runs the router's promises only
// then, not after every engine step.
import { EngineError, abortError, transportError } from '../../engines/errors.js';
import { isPlainObject } from '../../engines/handoff/common.js';
import { withFields } from '../../util/objects.js';
import { DONE_EVENT, makeEvent } from '../../engines/sse.js';
import type { Leg, LegStream, LegTransport } from '../../engines/transport.js';
import type { SseEvent, WorkerInfo } from '../../engines/types.js';
import { lowerFirstPriority } from '../../engines/priority.js';
import { makeUsage, wantsUsage } from '../../engines/usage.js';
import type { TokenOutput } from '../engine/index.js';
import { KvRendezvous, type PullResult } from './kv-rendezvous.js';
import type { VirtualPool } from './virtual-pool.js';

/** The bootstrap port every simulated SGLang prefill worker announces (hosts tell them apart). */
export const VIRTUAL_BOOTSTRAP_PORT = 8998;

interface VirtualWorker {
  info: WorkerInfo;
  host: string;
  pool: VirtualPool;
  /** The engine's index in its pool. */
  index: number;
  /** Legs running on the engine, by engine request id. */
  legs: Map<string, LegState>;
  /**
   * Requests taken off the engine before they finished, by how often: a step planned before
   * still reports their token, so a later leg of the same request gets another engine id.
   */
  dropped: Map<string, number>;
  failNext: number;
  /** Virtual-time spans [from, to) in which the worker refuses legs (to: Infinity = until told). */
  down: Array<{ fromMs: number; toMs: number }>;
}

/** A prefill leg: where its KV waits for the decode, and what its answer carries. */
interface PrefillSide {
  key: string;
  /** Whether this finish hands the KV off (otherwise the prefill's answer is the client's). */
  handsOff(finishReason: string): boolean;
  extras(out: TokenOutput, handsOff: boolean): { top?: Record<string, unknown>; choice?: Record<string, unknown> };
}

/** How a decode leg gets its prompt's KV. */
interface Pull {
  key: string;
  /** Wait for a prefill that has not finished (SGLang), or not (the sequential handoffs). */
  wait: boolean;
  /** A failed pull: compute the prompt locally (vLLM's default), or fail the leg. */
  recompute: boolean;
}

interface Plan {
  prompt: Uint32Array;
  maxTokens: number;
  /** The engine's scheduling priority (lower first), from the body's `priority` as the worker's kind reads it. */
  priority: number;
  prefill?: PrefillSide;
  pull?: Pull;
}

export interface VirtualTransportStats {
  legs: number;
  /** Decode legs that received their prompt's KV from a prefill engine. */
  kvPulled: number;
  /** Decode legs whose pull failed and that computed the prompt themselves (vLLM). */
  kvRecomputed: number;
  /** Failures injected with failNext. */
  injectedFailures: number;
  /** Legs refused by a worker that was down (setDown). */
  refusedLegs: number;
  /** Prefills holding KV that no decode pulled yet, and decode legs waiting for one. */
  openHandoffs: number;
}

export class VirtualTransport implements LegTransport {
  private readonly workers = new Map<number, VirtualWorker>();
  private readonly byEngine = new Map<VirtualPool, VirtualWorker[]>();
  private readonly byBootstrap = new Map<string, VirtualWorker>();
  readonly rendezvous = new KvRendezvous();
  private readonly counts = { legs: 0, kvRecomputed: 0, injectedFailures: 0, refusedLegs: 0 };
  private nextContextId = 0;

  constructor(private readonly clock: () => number) {}

  /** Serves the legs routed to `info.id` with engine `index` of `pool`. */
  addWorker(info: WorkerInfo, pool: VirtualPool, index: number): void {
    if (this.workers.has(info.id)) throw new RangeError(`worker ${info.id} is already simulated`);
    const w: VirtualWorker = { info, host: new URL(info.baseUrl).hostname, pool, index, legs: new Map(), dropped: new Map(), failNext: 0, down: [] };
    this.workers.set(info.id, w);
    let engines = this.byEngine.get(pool);
    if (!engines) this.byEngine.set(pool, (engines = []));
    engines[index] = w;
    if (info.bootstrapHost !== undefined) this.byBootstrap.set(`${info.bootstrapHost}:${info.bootstrapPort}`, w);
  }

  /** The next `count` legs sent to `worker` fail with a 500, as the simulated workers' fail_next fault does. */
  failNext(worker: number, count: number): void {
    const w = this.workers.get(worker);
    if (!w) throw new RangeError(`no simulated worker ${worker}`);
    if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`count must be an integer >= 0, got ${count}`);
    w.failNext += count;
  }

  /**
   * Takes `worker` down: it refuses every leg before accepting it (an EngineError with
   * mayHaveAccepted false, as a connection refused), from `fromMs` (default now) until `toMs`
   * (default: until setDown(worker, false)). setDown(worker, false) brings it back now.
   */
  setDown(worker: number, down: boolean | { fromMs?: number; toMs?: number } = true): void {
    const w = this.workers.get(worker);
    if (!w) throw new RangeError(`no simulated worker ${worker}`);
    const now = this.clock();
    if (down === false) {
      for (const span of w.down) if (span.toMs > now) span.toMs = Math.max(span.fromMs, now);
      return;
    }
    const span = down === true ? {} : down;
    const fromMs = span.fromMs ?? now;
    const toMs = span.toMs ?? Infinity;
    if (!Number.isFinite(fromMs) || !(toMs > fromMs)) throw new RangeError(`a down span needs fromMs < toMs, got [${fromMs}, ${toMs})`);
    w.down.push({ fromMs, toMs });
  }

  json(leg: Leg): Promise<unknown> {
    return this.start(leg, false) as Promise<unknown>;
  }

  stream(leg: Leg): Promise<LegStream> {
    return this.start(leg, true) as Promise<LegStream>;
  }

  /**
   * Hands a completed step's outputs to their legs; true when the router has something to see
   * (a first token, a stream's end, a JSON answer).
   */
  deliver(pool: VirtualPool, index: number, outputs: readonly TokenOutput[]): boolean {
    if (outputs.length === 0) return false;
    const w = this.byEngine.get(pool)?.[index];
    if (!w) return false;
    let seen = false;
    for (const out of outputs) {
      const leg = w.legs.get(out.id);
      // A leg cancelled while its step ran still has this step's token: nobody reads it.
      if (leg?.output(out)) seen = true;
    }
    return seen;
  }

  stats(): VirtualTransportStats {
    const r = this.rendezvous.stats();
    return {
      legs: this.counts.legs,
      kvPulled: r.pulled,
      kvRecomputed: this.counts.kvRecomputed,
      injectedFailures: this.counts.injectedFailures,
      refusedLegs: this.counts.refusedLegs,
      openHandoffs: r.open,
    };
  }

  private start(leg: Leg, streamed: boolean): Promise<unknown> {
    const w = this.workers.get(leg.worker.id);
    if (!w) return Promise.reject(transportError('engine_unreachable', leg.worker.baseUrl, `no simulated engine for worker ${leg.worker.id}`, false));
    if (leg.signal?.aborted) return Promise.reject(abortError(leg.signal));
    this.counts.legs++;
    if (w.down.length > 0 && isDown(w, this.clock())) {
      this.counts.refusedLegs++;
      return Promise.reject(transportError('engine_unreachable', w.info.baseUrl, `simulated worker ${w.info.id} is down`, false));
    }
    leg.onSent?.();
    if (w.failNext > 0) {
      w.failNext--;
      this.counts.injectedFailures++;
      return Promise.reject(rejected(w, 500, 'injected failure (fail_next)', 'injected_fault'));
    }
    let plan: Plan;
    try {
      plan = this.plan(w, leg);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => new LegState(this, w, leg, streamed, plan, resolve, reject).begin());
  }

  /** Reads the leg's body as the worker's engine kind and role would. */
  private plan(w: VirtualWorker, leg: Leg): Plan {
    const body = leg.body;
    if (!(body.prompt instanceof Uint32Array) || body.prompt.length === 0)
      throw rejected(w, 400, 'a simulated engine takes the prompt as a non-empty Uint32Array of token ids', 'invalid_prompt');
    const max = body.max_tokens ?? 16;
    if (!Number.isSafeInteger(max) || (max as number) < 1) throw rejected(w, 400, `max_tokens must be a positive integer, got ${String(max)}`, 'invalid_type');
    const { role, kind } = w.info;
    const field = body.priority ?? 0;
    if (!Number.isSafeInteger(field)) throw rejected(w, 400, `priority must be an integer, got ${String(field)}`, 'invalid_type');
    const plan: Plan = { prompt: body.prompt, maxTokens: max as number, priority: lowerFirstPriority(kind, field as number) };
    if (role === 'aggregated') return plan;
    if (kind === 'vllm') {
      const p = objectField(body, 'kv_transfer_params');
      if (role === 'prefill') {
        if (p?.do_remote_decode !== true)
          throw rejected(w, 400, 'a vLLM prefill worker needs kv_transfer_params with do_remote_decode: true', 'missing_kv_transfer_params');
        plan.prefill = this.vllmPrefill(w, leg.requestId);
      } else if (p?.do_remote_prefill === true) {
        plan.pull = { key: `${String(p.remote_engine_id)}/vllm:${String(p.remote_request_id)}`, wait: false, recompute: true };
      }
    } else if (kind === 'trtllm') {
      const dp = objectField(body, 'disaggregated_params');
      if (role === 'prefill') {
        if (dp?.request_type !== 'context_only')
          throw rejected(w, 400, 'a TensorRT-LLM context worker needs disaggregated_params {"request_type":"context_only"}', 'missing_disaggregated_params');
        plan.maxTokens = 1;
        plan.prefill = this.trtllmPrefill(w);
      } else if (dp) {
        if (dp.request_type !== 'generation_only' || typeof dp.encoded_opaque_state !== 'string')
          throw rejected(w, 400, 'a TensorRT-LLM generation worker needs disaggregated_params of a context worker', 'invalid_disaggregated_params');
        plan.pull = { key: dp.encoded_opaque_state, wait: false, recompute: false };
      }
    } else {
      const room = body.bootstrap_room;
      if (typeof room !== 'bigint' && typeof room !== 'number')
        throw rejected(w, 400, 'an SGLang prefill/decode worker needs bootstrap_room', 'missing_bootstrap');
      const at = `${String(body.bootstrap_host)}:${String(body.bootstrap_port)}`;
      const prefillWorker = role === 'prefill' ? w : this.byBootstrap.get(at);
      if (!prefillWorker || (role === 'prefill' && at !== `${w.info.bootstrapHost}:${w.info.bootstrapPort}`)) {
        throw rejected(w, 400, `no SGLang prefill worker bootstraps at ${at}`, 'missing_bootstrap');
      }
      const key = `${prefillWorker.info.id}/room:${room}`;
      if (role === 'prefill') {
        if (!this.rendezvous.open(key)) throw rejected(w, 409, `bootstrap_room ${room} is already in use on this prefill worker`, 'bootstrap_room_in_use');
        plan.maxTokens = 1;
        plan.prefill = { key, handsOff: () => true, extras: () => ({}) };
      } else {
        plan.pull = { key, wait: true, recompute: false };
      }
    }
    return plan;
  }

  private vllmPrefill(w: VirtualWorker, requestId: string): PrefillSide {
    const engineId = String(w.info.id);
    const key = `${engineId}/vllm:${requestId}`;
    if (!this.rendezvous.open(key)) throw rejected(w, 409, `request ${requestId} is already held`, 'duplicate_request_id');
    return {
      key,
      handsOff: (reason) => reason === 'length',
      extras: (_out, handsOff) => ({
        top: {
          kv_transfer_params: handsOff
            ? {
                do_remote_prefill: true,
                do_remote_decode: false,
                remote_block_ids: [],
                remote_engine_id: engineId,
                remote_request_id: requestId,
                remote_host: w.host,
                remote_port: VIRTUAL_BOOTSTRAP_PORT,
                tp_size: 1,
              }
            : null,
        },
      }),
    };
  }

  private trtllmPrefill(w: VirtualWorker): PrefillSide {
    const ctxRequestId = ++this.nextContextId;
    const key = `${w.info.id}/ctx:${ctxRequestId}`;
    this.rendezvous.open(key);
    return {
      key,
      handsOff: (reason) => reason === 'length',
      extras: (out, handsOff) =>
        handsOff
          ? {
              choice: {
                disaggregated_params: {
                  request_type: 'context_only',
                  first_gen_tokens: [out.tokenId],
                  ctx_request_id: ctxRequestId,
                  encoded_opaque_state: key,
                  draft_tokens: null,
                },
              },
            }
          : {},
    };
  }

  /** @internal a decode leg computes its prompt itself after a failed pull */
  recomputed(): void {
    this.counts.kvRecomputed++;
  }

  /** @internal */
  now(): number {
    return this.clock();
  }
}

/** One leg on its engine, from its arrival to its answer or its end. */
class LegState {
  private stream: VirtualStream | undefined;
  private settled = false;
  private submitted = false;
  private finished = false;
  private cancelPull: (() => void) | undefined;
  private readonly head: AnswerHead;
  /** The request's id, unless an earlier leg of it was dropped from this engine. */
  private engineId: string;

  constructor(
    private readonly t: VirtualTransport,
    private readonly w: VirtualWorker,
    private readonly leg: Leg,
    private readonly streamed: boolean,
    private readonly plan: Plan,
    private readonly resolve: (v: unknown) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.head = { id: `cmpl-${leg.requestId}`, object: 'text_completion', created: 0, model: typeof leg.body.model === 'string' ? leg.body.model : 'replay' };
    const dropped = w.dropped.get(leg.requestId);
    this.engineId = dropped === undefined ? leg.requestId : `${leg.requestId}#${dropped}`;
  }

  begin(): void {
    this.leg.signal?.addEventListener('abort', this.onAbort, { once: true });
    const pull = this.plan.pull;
    if (!pull) return this.submit(0);
    this.cancelPull = this.t.rendezvous.pull(pull.key, pull.wait, (r: PullResult) => {
      this.cancelPull = undefined;
      if (r.ok) return this.submit(Math.min(r.held.promptTokens, this.plan.prompt.length));
      if (pull.recompute) {
        this.t.recomputed();
        return this.submit(0);
      }
      this.fail(rejected(this.w, 500, `KV transfer failed: ${r.reason}`, 'kv_transfer_failed'));
    });
  }

  /** A step's output for this leg; true when the router sees it. */
  output(out: TokenOutput): boolean {
    if (out.finishReason !== undefined) return this.finish(out);
    if (!this.streamed || out.index !== 0) return false;
    this.stream!.push([chunk(withFields(this.head, { choices: [choice(null)] }))]);
    return true;
  }

  private submit(kvTransferredTokens: number): void {
    const { w, plan } = this;
    const engine = w.pool.engines[w.index];
    const now = this.t.now();
    try {
      engine.submit(
        {
          id: this.engineId,
          promptTokens: plan.prompt,
          maxTokens: plan.maxTokens,
          kvTransferredTokens,
          holdBlocksAfterFinish: plan.prefill !== undefined,
          priority: plan.priority,
        },
        now,
      );
    } catch (err) {
      // The prompt can never fit this engine, or the id is in use: the engine refuses the request.
      return this.fail(rejected(w, 400, (err as Error).message, 'invalid_request'));
    }
    this.submitted = true;
    w.legs.set(this.engineId, this);
    w.pool.kick(w.index, now);
    if (this.streamed) {
      this.stream = new VirtualStream(() => this.cancel());
      this.settled = true;
      this.resolve(this.stream);
    }
  }

  private finish(out: TokenOutput): boolean {
    const { w, plan, leg } = this;
    this.finished = true;
    w.legs.delete(this.engineId);
    leg.signal?.removeEventListener('abort', this.onAbort);
    const usage = makeUsage(out.promptTokens, out.index + 1, out.cachedTokens);
    const reason = out.finishReason!;
    let extras: { top?: Record<string, unknown>; choice?: Record<string, unknown> } = {};
    const prefill = plan.prefill;
    if (prefill) {
      // The engine holds the finished prefill's blocks until the decode leg pulls them.
      const engine = w.pool.engines[w.index];
      const id = this.engineId;
      const handsOff = prefill.handsOff(reason);
      if (handsOff) this.t.rendezvous.ready(prefill.key, { promptTokens: out.promptTokens, release: () => engine.release(id) });
      else this.t.rendezvous.fail(prefill.key, 'the request finished at prefill');
      extras = prefill.extras(out, handsOff);
    }
    if (this.streamed) {
      const batch: SseEvent[] = [chunk(withFields(this.head, { choices: [choice(reason, extras.choice)] }))];
      if (wantsUsage(leg.body)) batch.push(chunk(withFields(this.head, { choices: [], usage })));
      batch.push(DONE_EVENT);
      this.stream!.push(batch);
      this.stream!.end();
      return true;
    }
    this.settled = true;
    this.resolve(withFields(this.head, { choices: [choice(reason, extras.choice)], usage }, extras.top ?? {}));
    return true;
  }

  /** The leg's signal fired: the engine drops the request, the caller gets an AbortError. */
  private readonly onAbort = (): void => {
    const err = abortError(this.leg.signal);
    this.drop('the prefill was aborted');
    if (this.stream) this.stream.fail(err);
    else this.fail(err);
  };

  /** The consumer closed the stream. */
  private cancel(): void {
    this.leg.signal?.removeEventListener('abort', this.onAbort);
    this.drop('the decode leg was closed');
  }

  /** Takes the leg off its engine (and out of the rendezvous) unless it already finished. */
  private drop(reason: string): void {
    this.cancelPull?.();
    this.cancelPull = undefined;
    if (this.plan.prefill && !this.finished) this.t.rendezvous.fail(this.plan.prefill.key, reason);
    if (this.submitted && !this.finished) {
      const { w } = this;
      this.finished = true;
      w.legs.delete(this.engineId);
      w.pool.engines[w.index].abort(this.engineId, this.t.now());
      w.dropped.set(this.leg.requestId, (w.dropped.get(this.leg.requestId) ?? 0) + 1);
    }
  }

  private fail(err: unknown): void {
    this.leg.signal?.removeEventListener('abort', this.onAbort);
    if (this.plan.prefill && !this.finished) this.t.rendezvous.fail(this.plan.prefill.key, 'the prefill failed');
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }
}

/** A streamed answer, pulled a batch at a time. */
class VirtualStream implements LegStream {
  private readonly queue: Array<readonly SseEvent[]> = [];
  private ended = false;
  private failure: unknown;
  private waiter: { resolve(b: readonly SseEvent[] | null): void; reject(err: unknown): void } | undefined;

  constructor(private readonly onCancel: () => void) {}

  push(batch: readonly SseEvent[]): void {
    if (this.ended) return;
    const w = this.waiter;
    this.waiter = undefined;
    if (w) w.resolve(batch);
    else this.queue.push(batch);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve(null);
  }

  fail(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift()!);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(null);
    if (this.waiter) return Promise.reject(new TypeError('a stream is read by one reader at a time'));
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  cancel(): void {
    if (this.ended) return;
    this.queue.length = 0;
    this.end();
    this.onCancel();
  }

  async return(): Promise<unknown> {
    this.cancel();
    return { value: undefined, done: true };
  }
}

/** What every answer and chunk of a leg starts with (a completions answer, as vLLM writes it). */
interface AnswerHead {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
}

/** The one choice of an answer or chunk; the simulated engines generate no text. */
function choice(finishReason: string | null, extra?: Record<string, unknown>): Record<string, unknown> {
  const c = { index: 0, text: '', logprobs: null, finish_reason: finishReason, stop_reason: null };
  return extra ? withFields(c, extra) : c;
}

/** A chunk as an engine event: its shape is read (and its JSON parsed) once, on first use, as for HTTP engines. */
function chunk(value: Record<string, unknown>): SseEvent {
  return makeEvent(JSON.stringify(value));
}

function isDown(w: VirtualWorker, now: number): boolean {
  for (const span of w.down) if (span.fromMs <= now && now < span.toMs) return true;
  return false;
}

function rejected(w: VirtualWorker, status: number, message: string, code: string): EngineError {
  const type = status < 500 ? 'invalid_request_error' : 'server_error';
  return new EngineError(
    status,
    { error: { message, type, code } },
    `engine ${w.info.baseUrl} answered ${status}: ${message}`,
    'engine_rejected',
    w.info.baseUrl,
  );
}

function objectField(body: Record<string, unknown>, name: string): Record<string, unknown> | undefined {
  const v = body[name];
  return isPlainObject(v) ? v : undefined;
}
