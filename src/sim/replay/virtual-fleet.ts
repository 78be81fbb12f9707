// Offline trace replay in virtual time: a discrete-event simulation of a fleet of simulated
// engines (the same EngineModel the live simulated workers run) fed by a trace's arrivals, with
// the live router's RoutingCore deciding. Aggregated (one pool) or disaggregated (a prefill pool
// handing the KV over to a decode pool, as vLLM's NIXL path does). Nothing here sleeps or reads
// a clock.
import { RoutingError } from '../../core/routing-errors.js';
import type { EngineConfig, TokenOutput } from '../engine/index.js';
import { EventQueue } from './event-queue.js';
import { setupPolicy, type ReplayPolicy } from './policies.js';
import { synthesizePrompt } from './synth.js';
import type { TraceRequest } from './trace.js';
import { LoadSpreadSampler, VirtualPool, type StepDone } from './virtual-pool.js';

export interface VirtualFleetOptions {
  /** Aggregated workers; ignored when `disaggregated` is set. */
  workers: number;
  disaggregated?: { prefill: number; decode: number };
  policy: ReplayPolicy;
  /** Engine settings of every worker; blockSize is also the router's. */
  engine: EngineConfig & { blockSize: number; kvBlocks: number };
  seed: number;
  /** Arrivals are compressed by this factor (2 = twice the trace's request rate). */
  arrivalScale: number;
  /** How often (virtual ms) booked prefill load is sampled for the spread figure. */
  loadSampleMs?: number;
  onProgress?: (done: number, total: number) => void;
}

/** What happened to one request, in virtual ms. */
export interface RequestRecord {
  arrivalMs: number;
  worker: number;
  promptTokens: number;
  cachedTokens: number;
  outputTokens: number;
  firstTokenMs: number;
  finishMs: number;
  refused: boolean;
}

/** The record of a request that has not arrived yet (arrival time already scaled). */
export function pendingRecord(req: TraceRequest, arrivalScale: number): RequestRecord {
  return {
    arrivalMs: req.timestamp / arrivalScale,
    worker: -1,
    promptTokens: req.inputLength,
    cachedTokens: 0,
    outputTokens: 0,
    firstTokenMs: Number.NaN,
    finishMs: Number.NaN,
    refused: false,
  };
}

export interface FleetRun {
  records: RequestRecord[];
  /** Mean over time of max / mean booked prefill tokens across the (prefill) workers. */
  loadSpread: number;
  simulatedMs: number;
}

const FAR_FUTURE_MS = 1e15;

export function runVirtualFleet(trace: readonly TraceRequest[], opts: VirtualFleetOptions): FleetRun {
  let now = 0;
  const clock = () => now;
  const steps = new EventQueue<StepDone>();
  const makePool = (name: string, workers: number, overlapScoreCredit?: number) =>
    new VirtualPool(
      name,
      workers,
      opts.engine,
      // Bookings must not expire while a request waits in a saturated virtual queue.
      setupPolicy(opts.policy, {
        blockSize: opts.engine.blockSize,
        seed: opts.seed,
        clock,
        overrides: { staleBookingMs: FAR_FUTURE_MS, ...(overlapScoreCredit === undefined ? {} : { overlapScoreCredit }) },
      }),
      steps,
      opts.seed + name.length,
    );
  const disagg = opts.disaggregated;
  const prefillPool = disagg ? makePool('prefill', disagg.prefill) : undefined;
  // The decode leg assumes no KV reuse (overlap credit 0), as the seeds' decode override does.
  const mainPool = disagg ? makePool('decode', disagg.decode, 0) : makePool('aggregated', opts.workers);
  const loadPool = prefillPool ?? mainPool;

  const records = trace.map((r) => pendingRecord(r, opts.arrivalScale));
  // Prompts of requests between their prefill and decode legs, and where their prefill ran.
  const handoff = new Map<string, { tokens: Uint32Array; prefillWorker: number }>();
  const spread = new LoadSpreadSampler(opts.loadSampleMs ?? 1000);

  const admit = (pool: VirtualPool, id: string, tokens: Uint32Array, maxTokens: number, extra: object): number => {
    const decision = pool.routing.core.route(tokens, { requestId: id, expectedOutputTokens: maxTokens });
    try {
      pool.engines[decision.worker].submit({ id, promptTokens: tokens, maxTokens, ...extra }, now);
    } catch (err) {
      pool.routing.core.free(id);
      throw err;
    }
    pool.kick(decision.worker, now);
    return decision.worker;
  };

  const refuse = (i: number, err: unknown) => {
    if (!(err instanceof RoutingError || err instanceof RangeError)) throw err;
    records[i].refused = true;
  };

  const arrive = (i: number) => {
    const req = trace[i];
    const id = String(i);
    const tokens = synthesizePrompt(req, opts.seed);
    try {
      if (prefillPool) {
        const prefillWorker = admit(prefillPool, id, tokens, 1, { holdBlocksAfterFinish: true });
        handoff.set(id, { tokens, prefillWorker });
      } else {
        records[i].worker = admit(mainPool, id, tokens, req.outputLength, {});
      }
    } catch (err) {
      refuse(i, err);
    }
  };

  const onPrefillOutput = (out: TokenOutput) => {
    const i = Number(out.id);
    prefillPool!.routing.core.markPrefillCompleted(out.id);
    prefillPool!.routing.core.free(out.id);
    records[i].cachedTokens = out.cachedTokens;
    const leg = handoff.get(out.id)!;
    try {
      records[i].worker = admit(mainPool, out.id, leg.tokens, trace[i].outputLength, { kvTransferredTokens: leg.tokens.length });
    } catch (err) {
      prefillPool!.engines[leg.prefillWorker].release(out.id);
      handoff.delete(out.id);
      refuse(i, err);
    }
  };

  const onOutput = (out: TokenOutput) => {
    const rec = records[Number(out.id)];
    if (out.index === 0) {
      rec.firstTokenMs = now;
      if (!prefillPool) rec.cachedTokens = out.cachedTokens;
      mainPool.routing.core.markPrefillCompleted(out.id);
      const leg = handoff.get(out.id);
      if (leg) {
        // The decode worker has pulled the KV: the prefill worker may drop its hold.
        prefillPool!.engines[leg.prefillWorker].release(out.id);
        handoff.delete(out.id);
      }
    }
    rec.outputTokens = out.index + 1;
    if (out.finishReason) {
      rec.finishMs = now;
      mainPool.routing.core.free(out.id);
    }
  };

  let next = 0;
  let reported = 0;
  while (next < trace.length || steps.size > 0) {
    const arrivalMs = next < trace.length ? records[next].arrivalMs : Infinity;
    if (arrivalMs <= steps.peekTime()) {
      now = arrivalMs;
      arrive(next++);
    } else {
      const { time, item } = steps.pop()!;
      now = time;
      const outputs = item.pool.completeStep(item.worker, now);
      for (const out of outputs) (item.pool === prefillPool ? onPrefillOutput : onOutput)(out);
    }
    spread.maybeSample(now, loadPool);
    if (opts.onProgress && next - reported >= 256) opts.onProgress((reported = next), trace.length);
  }
  opts.onProgress?.(trace.length, trace.length);
  return { records, loadSpread: spread.value(), simulatedMs: now };
}
