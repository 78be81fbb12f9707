// Offline trace replay in virtual time: a discrete-event simulation of a fleet of simulated
// engines (the same EngineModel the live simulated workers run) fed by a trace's arrivals, with
// the live router deciding. Every request goes through a PrefillRouter over two KvRouters, exactly
// as the server runs it, whose legs reach the engines through the VirtualTransport instead of
// HTTP: aggregated (no prefill workers: pass-through to the decode pool) or disaggregated (a
// prefill pool handing the KV to a decode pool in the handoff style of the workers' engine kind).
// Nothing here sleeps or reads a clock.
//
// The router is asynchronous; the simulation is not. After an arrival, and after an engine step
// whose outputs the router can see (a leg answered, a first token, a stream's end), the
// simulation lets every pending promise run (one macrotask turn: the microtask queue drains
// completely before it) before the next event, so each routing decision is taken at the virtual
// time its cause happened. Steps the router cannot see cost no turn.
import { RoutingError } from '../../core/routing-errors.js';
import type { RoutingConfig } from '../../core/routing-core.js';
import { EngineError } from '../../engines/errors.js';
import { batchesOf } from '../../engines/event-batch.js';
import { carriesToken } from '../../engines/sse.js';
import type { EngineKind, WorkerInfo } from '../../engines/types.js';
import { eventUsage, usageCounts } from '../../engines/usage.js';
import { KvRouter } from '../../routing/kv-router.js';
import { PrefillRouter, type PoolName, type PrefillRouterStats } from '../../routing/prefill-router.js';
import type { ConditionalDisaggSettings } from '../../routing/prefill/mode.js';
import type { QueueSettings, QueueStats } from '../../routing/queue/admission-queue.js';
import { mix32, seed32 } from '../engine/rng.js';
import type { RoutedResponse } from '../../routing/router-request.js';
import type { OutlierDetectionOptions } from '../../routing/outlier-detection.js';
import { WorkerPool } from '../../routing/worker-pool.js';
import type { SignalLike } from '../../util/cancellation.js';
import { withFields } from '../../util/objects.js';
import type { EngineConfig } from '../engine/index.js';
import { EventQueue } from './event-queue.js';
import { setupPolicy, type ReplayPolicy } from './policies.js';
import { pendingRecord, type RequestRecord } from './records.js';
import { PromptSynthesizer } from './synth.js';
import type { TraceRequest } from './trace.js';
import { VirtualTimers } from './virtual-timers.js';
import { VIRTUAL_BOOTSTRAP_PORT, VirtualTransport } from './virtual-transport.js';
import { LoadSpreadSampler, VirtualPool, type StepDone } from './virtual-pool.js';

export type { RequestRecord };

export interface VirtualFleetOptions {
  /** Aggregated workers; ignored when `disaggregated` is set. */
  workers: number;
  disaggregated?: { prefill: number; decode: number };
  /** The workers' engine kind, which decides the prefill -> decode handoff. Default vllm. */
  handoff?: EngineKind;
  policy: ReplayPolicy;
  /** Routing settings over the policy's (e.g. a kv weight of a sweep; maxQueuedPrefillTokens: refuse with 429 above a cap). */
  routing?: Partial<RoutingConfig>;
  /** Engine settings of every worker; blockSize is also the router's. */
  engine: EngineConfig & { blockSize: number; kvBlocks: number };
  seed: number;
  /** Arrivals are compressed by this factor (2 = twice the trace's request rate). */
  arrivalScale: number;
  /** How often (virtual ms) booked prefill load is sampled for the spread figure. */
  loadSampleMs?: number;
  /**
   * Workers that are down (refuse legs before accepting them, as a connection refused) over spans
   * of virtual time; the router fails their legs over to other workers. None by default.
   */
  down?: ReadonlyArray<{ worker: number; fromMs?: number; toMs?: number }>;
  /** Passive ejection of failing workers, in virtual time; off by default. */
  outlierDetection?: OutlierDetectionOptions;
  onProgress?: (done: number, total: number) => void;
  /** The router queue of each pool (off unless given a threshold); its unit defaults to the engines' max_num_batched_tokens. */
  routerQueue?: Partial<QueueSettings>;
  /** Conditional disaggregation (a disaggregated fleet). */
  conditionalDisagg?: Partial<ConditionalDisaggSettings>;
  /** Share of requests given priority 1 where the trace gives none, drawn from the seed. */
  highPriorityShare?: number;
  /**
   * The router forwards each request's priority to its engine (PrefillRouter's forwardPriority);
   * for it to count, give the engines `schedulingPolicy: 'priority'`. Default false.
   */
  forwardPriority?: boolean;
  /** Whether the router indexes the blocks engines report on their CPU tiers (default true; false: it ignores them). */
  lowerTiers?: boolean;
}

export interface FleetRun {
  records: RequestRecord[];
  /** Mean over time of max / mean booked prefill tokens across the (prefill) workers. */
  loadSpread: number;
  simulatedMs: number;
  /** The router's counts: requests per mode and mode reason, fallbacks, requests finished at prefill. */
  router: PrefillRouterStats;
  /** The router queues' counts. */
  queues: Record<PoolName, QueueStats>;
  /** The engines' CPU offload tiers, summed (only when they have one). */
  offload?: OffloadTotals;
}

/** What the engines' prefix caches and CPU tiers did over a run, summed over every engine. */
export interface OffloadTotals {
  /** Prompt tokens at first admission, those found on the GPU, those reloaded from the CPU. */
  promptTokens: number;
  gpuHitTokens: number;
  cpuHitTokens: number;
  /** Blocks moved to the CPU tiers, and evicted from them. */
  stores: number;
  evictions: number;
}

const FAR_FUTURE_MS = 1e15;

/** Lets every pending promise run: the microtask queue drains completely before a macrotask. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class VirtualFleet {
  readonly router: PrefillRouter;
  readonly transport: VirtualTransport;
  /** The prefill engines (disaggregated only). */
  readonly prefillEngines: VirtualPool | undefined;
  /** The decode engines, or the aggregated ones. */
  readonly decodeEngines: VirtualPool;
  private now = 0;
  private readonly steps = new EventQueue<StepDone>();
  // The router queues' wait-limit timers, fired in virtual time.
  private readonly timers = new VirtualTimers();
  private used = false;

  constructor(private readonly opts: VirtualFleetOptions) {
    const clock = () => this.now;
    this.transport = new VirtualTransport(clock);
    const kind = opts.handoff ?? 'vllm';
    const disagg = opts.disaggregated;
    // Bookings must not expire while a request waits in a saturated virtual queue.
    const routing = () =>
      setupPolicy(opts.policy, {
        blockSize: opts.engine.blockSize,
        seed: opts.seed,
        clock,
        overrides: withFields(opts.routing ?? {}, { staleBookingMs: FAR_FUTURE_MS }),
        lowerTiers: opts.lowerTiers,
      });
    const engines = (name: string, count: number, firstId: number) =>
      new VirtualPool(
        name,
        count,
        opts.engine,
        routing(),
        this.steps,
        opts.seed + name.length,
        Array.from({ length: count }, (_, i) => firstId + i),
      );
    this.prefillEngines = disagg ? engines('prefill', disagg.prefill, 0) : undefined;
    this.decodeEngines = disagg ? engines('decode', disagg.decode, disagg.prefill) : engines('aggregated', opts.workers, 0);
    const router = (name: string, roles: WorkerInfo['role'][], pool: VirtualPool | undefined) => {
      const core = (pool?.routing ?? routing()).core;
      const workers = new WorkerPool(name, core, roles, opts.outlierDetection && { outlierDetection: opts.outlierDetection, clock });
      return new KvRouter({ core, pool: workers, transport: this.transport });
    };
    this.router = new PrefillRouter({
      prefill: router('prefill', ['prefill'], this.prefillEngines),
      decode: router('decode', ['decode', 'aggregated'], this.decodeEngines),
      clock,
      timers: this.timers,
      queue: opts.routerQueue && Object.assign({ maxNumBatchedTokens: this.decodeEngines.engines[0].config.maxNumBatchedTokens }, opts.routerQueue),
      conditionalDisagg: opts.conditionalDisagg,
      forwardPriority: opts.forwardPriority,
    });
    const role = disagg ? 'decode' : 'aggregated';
    if (this.prefillEngines) this.addWorkers(this.router.prefill.pool, this.prefillEngines, 0, 'prefill', kind);
    this.addWorkers(this.router.decode.pool, this.decodeEngines, disagg ? disagg.prefill : 0, role, kind);
    for (const d of opts.down ?? []) this.transport.setDown(d.worker, { fromMs: d.fromMs ?? 0, toMs: d.toMs });
  }

  /** Replays `trace` (once per fleet): every request through the router, in virtual time. */
  async run(trace: readonly TraceRequest[]): Promise<FleetRun> {
    if (this.used) throw new Error('a VirtualFleet replays one trace');
    this.used = true;
    const { opts, steps, timers } = this;
    const records = trace.map((r) => pendingRecord(r, opts.arrivalScale));
    if (opts.highPriorityShare !== undefined) assignPriorities(trace, records, opts.highPriorityShare, opts.seed);
    const spread = new LoadSpreadSampler(opts.loadSampleMs ?? 1000);
    const loadPool = this.prefillEngines ?? this.decodeEngines;
    const prompts = new PromptSynthesizer(opts.seed);
    const client = new ReplayClient(
      this.router,
      () => this.now,
      (tokens) => prompts.recycle(tokens),
    );

    let next = 0;
    let reported = 0;
    while (next < trace.length || steps.size > 0 || timers.nextTime() < Infinity) {
      const arrivalMs = next < trace.length ? records[next].arrivalMs : Infinity;
      const timerMs = timers.nextTime();
      // A timer goes last among events of its time: an arrival's or a step's turn may make it moot.
      if (timerMs < arrivalMs && timerMs < steps.peekTime()) {
        this.now = timerMs;
        timers.fireNext();
        await settle();
      } else if (arrivalMs <= steps.peekTime()) {
        this.now = arrivalMs;
        const i = next++;
        client.send(String(i), trace[i], prompts.prompt(trace[i]), records[i]);
        await settle();
      } else {
        const time = steps.peekTime();
        const item = steps.popItem()!;
        this.now = time;
        const outputs = item.pool.completeStep(item.index, time);
        if (this.transport.deliver(item.pool, item.index, outputs)) await settle();
      }
      client.check();
      spread.maybeSample(this.now, loadPool);
      if (opts.onProgress && next - reported >= 256) opts.onProgress((reported = next), trace.length);
    }
    await settle();
    client.check();
    if (client.open > 0) throw new Error(`replay ended with ${client.open} requests that never finished (the simulation stalled)`);
    await this.router.idle();
    opts.onProgress?.(trace.length, trace.length);
    const run: FleetRun = { records, loadSpread: spread.value(), simulatedMs: this.now, router: this.router.stats(), queues: this.router.queueStats() };
    if ((opts.engine.offloadBlocks ?? 0) > 0) run.offload = this.offloadTotals();
    return run;
  }

  private offloadTotals(): OffloadTotals {
    const t: OffloadTotals = { promptTokens: 0, gpuHitTokens: 0, cpuHitTokens: 0, stores: 0, evictions: 0 };
    for (const engine of [...(this.prefillEngines?.engines ?? []), ...this.decodeEngines.engines]) {
      const m = engine.metrics();
      t.promptTokens += m.promptTokens;
      t.gpuHitTokens += m.cachedTokens - m.reloadedTokens;
      t.cpuHitTokens += m.reloadedTokens;
      t.stores += m.offloadStores;
      t.evictions += m.offloadEvictions;
    }
    return t;
  }

  private addWorkers(pool: WorkerPool, engines: VirtualPool, firstId: number, role: WorkerInfo['role'], kind: EngineKind): void {
    for (let i = 0; i < engines.engines.length; i++) {
      const id = firstId + i;
      const info: WorkerInfo = { id, role, kind, baseUrl: `http://replay-worker-${id}.invalid`, dpSize: 1, kvCapacityBlocks: this.opts.engine.kvBlocks };
      if (role === 'prefill' && kind === 'sglang') {
        info.bootstrapHost = `replay-worker-${id}.invalid`;
        info.bootstrapPort = VIRTUAL_BOOTSTRAP_PORT;
      }
      pool.add(info);
      this.transport.addWorker(info, engines, i);
    }
  }
}

/** Priority 1 for a seeded `share` of the requests whose trace line gives no priority. */
function assignPriorities(trace: readonly TraceRequest[], records: RequestRecord[], share: number, seed: number): void {
  if (!(share >= 0 && share <= 1)) throw new RangeError(`highPriorityShare must be in [0, 1], got ${share}`);
  const s = seed32(seed ^ 0x5eed);
  for (let i = 0; i < records.length; i++) {
    if (trace[i].priority === undefined && mix32(s ^ mix32(i)) / 2 ** 32 < share) records[i].priority = 1;
  }
}

export function runVirtualFleet(trace: readonly TraceRequest[], opts: VirtualFleetOptions): Promise<FleetRun> {
  return new VirtualFleet(opts).run(trace);
}

/**
 * The trace's clients: each request streamed through the router (usage asked for), its first
 * token, end and usage recorded at the virtual time they arrive. A refusal (a RoutingError, or an
 * engine's 4xx verdict on the request) is recorded; any other failure stops the replay.
 */
class ReplayClient {
  open = 0;
  private failure: unknown;

  constructor(
    private readonly router: PrefillRouter,
    private readonly clock: () => number,
    /** A finished request's prompt: nothing reads it any more. */
    private readonly done: (tokens: Uint32Array) => void,
  ) {}

  send(requestId: string, req: TraceRequest, tokens: Uint32Array, rec: RequestRecord): void {
    const body = { model: 'replay', prompt: tokens, max_tokens: req.outputLength, stream: true, stream_options: { include_usage: true } };
    this.open++;
    this.router
      .handle({ route: '/v1/completions', body, tokens, requestId, hints: rec.priority === 0 ? {} : { priority: rec.priority }, signal: STAYS })
      .then((res) => this.read(res, rec))
      .then(
        () => {
          this.open--;
          this.done(tokens);
        },
        (err: unknown) => {
          this.open--;
          if (!isRefusal(err)) return void (this.failure ??= err);
          rec.refused = true;
          this.done(tokens);
        },
      );
  }

  /** Throws the first failure that was not a refusal. */
  check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private async read(res: RoutedResponse, rec: RequestRecord): Promise<void> {
    rec.worker = Number(res.headers['x-kvroute-decode-worker'] ?? res.headers['x-kvroute-prefill-worker']);
    rec.modeReason = res.headers['x-kvroute-mode-reason'];
    if (!res.stream) throw new Error('the router answered a streamed request without a stream');
    const events = batchesOf(res.stream[Symbol.asyncIterator]());
    for (let batch = await events.nextBatch(); batch !== null; batch = await events.nextBatch()) {
      for (const ev of batch) {
        if (Number.isNaN(rec.firstTokenMs) && carriesToken(ev)) rec.firstTokenMs = this.clock();
        const usage = eventUsage(ev);
        if (usage) {
          const c = usageCounts(usage);
          rec.cachedTokens = c.cachedTokens ?? 0;
          rec.outputTokens = c.completionTokens;
        }
      }
    }
    rec.finishMs = this.clock();
  }
}

/** The signal of a client that never leaves: nothing to listen to. */
const STAYS: SignalLike = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {} };

function isRefusal(err: unknown): boolean {
  return err instanceof RoutingError || (err instanceof EngineError && err.failure === 'engine_rejected' && err.status >= 400 && err.status < 500);
}
