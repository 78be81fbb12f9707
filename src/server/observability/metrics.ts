// Prometheus metrics on a registry of kvroute's own (never prom-client's global one, so a host
// application embedding the router keeps its metrics separate). Request-path figures are recorded
// as they happen; state owned by other parts (bookings, event ingest, the registry) is read at
// scrape time through MetricsSources, so the hot path pays nothing for it.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SessionAffinityStats } from '../../routing/session-affinity.js';
import type { QueueEvent, QueueStats } from '../../routing/queue/admission-queue.js';
import { ChildCache, FastCounter, FastHistogram, type CounterSeries, type HistogramSeries } from './fast-metrics.js';
import { registerReplicaMetrics, type ReplicaStatsSample } from './replica-metrics.js';
import { registerWarmStartMetrics, type WarmStartSample } from './warm-metrics.js';
import { registerDiscoveryMetrics, type DiscoveryStatsSample } from './discovery-metrics.js';
import { registerTokenizerCacheMetrics, type TokenizerCacheSample } from './preprocess-metrics.js';
import { processMetrics } from './process-metrics.js';

export interface WorkerLoadSample {
  pool: string;
  worker: number;
  dpRank: number;
  prefillTokens: number;
  decodeBlocks: number;
  requests: number;
}

export interface EventStatsSample {
  worker: number;
  applied: number;
  rejected: Record<string, number>;
  /** Of those applied, events about lower tiers (CPU, disk, external). */
  lowerTier?: number;
  /** Events left out on purpose, by reason: unknown_type, other_group (hybrid models), other_medium (unknown media, or lower tiers when not indexed). */
  skipped?: Record<string, number>;
  joins: number;
  gaps: number;
  replays: number;
  decodeErrors: number;
  restarts: number;
  /** The engine's stored events carry another block size than the router's (all refused). */
  blockSizeMismatch?: { engineBlockSize: number; routerBlockSize: number };
}

export interface MetricsSources {
  workerLoads(): WorkerLoadSample[];
  workerStates(): Array<{ worker: number; role: string; state: string }>;
  eventStats(): EventStatsSample[];
  indexStats(): Array<{ pool: string; blocks: number; workers: number; lowerTierBlocks?: Record<string, number> }>;
  fallbacksToAggregated(): number;
  /** Session affinity's counts, when it is on. */
  sessionStats?(): SessionAffinityStats | undefined;
  /** The replica sync's counts, when router replicas share state. */
  replicaStats?(): ReplicaStatsSample | undefined;
  /** The warm start and snapshot publishing, when router replicas share state. */
  warmStartStats?(): WarmStartSample | undefined;
  /** Worker discovery, when it is configured. */
  discoveryStats?(): DiscoveryStatsSample | undefined;
  /** Workers out of selection now after consecutive failures (outlier detection). */
  ejectedWorkers?(): Array<{ pool: string; worker: number }>;
  /** The router queue of each pool. */
  queueStats?(): Record<string, QueueStats>;
  /** Mode decisions by reason (conditional disaggregation). */
  modeReasons?(): Record<string, number>;
  /** The tokenizer prefix cache's counters, when it is on. */
  tokenizerCache?(): TokenizerCacheSample | undefined;
}

/** Cumulative figures of the request path, read by the live page's history (metrics-history.ts). */
export interface MetricsTotals {
  /** Upper bounds of the TTFT buckets, seconds. */
  ttftBounds: readonly number[];
  /** TTFT observations per bucket (not cumulative), every route together; `ttftCount` includes those above the last bound. */
  ttftBuckets: Float64Array;
  ttftCount: number;
  /** Predicted hit rate per pool: sum and count of the per-request ratios. */
  hitRate: Record<string, { sum: number; count: number }>;
  /** Answers of the OpenAI routes, and those of them that were not 2xx. */
  requests: number;
  errors: number;
  /** Requests served, by mode. */
  served: Record<string, number>;
  /** Mode decisions by reason. */
  reasons: Record<string, number>;
}

export interface RoutingTimingsUs {
  hash: number;
  match: number;
  select: number;
  total: number;
}

// Microsecond buckets: a decision takes single-digit microseconds, a slow one hundreds.
const OVERHEAD_BUCKETS_US = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 50_000];
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Per output token: a fast decode step is a few milliseconds, a loaded one hundreds. */
const TOKEN_BUCKETS_S = [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5];
const RATIO_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1];

export class RouterMetrics {
  readonly registry = new Registry();
  private sources?: MetricsSources;

  // The figures every request updates are FastHistogram / FastCounter (fast-metrics.ts), in the
  // same registry and rendered the same way: prom-client's per-call work was most of the metrics' cost.
  private readonly requests = new FastCounter({
    name: 'kvroute_requests_total',
    help: "HTTP requests answered, by route, status code and model (the OpenAI routes; 'unknown' before the body named one)",
    labelNames: ['route', 'model', 'status'],
    registry: this.registry,
  });
  private readonly errors = new FastCounter({
    name: 'kvroute_request_errors_total',
    help: 'Requests answered with an OpenAI error (a 4xx or 5xx body, or the error frame that ended a stream), by route, model, status and error code',
    labelNames: ['route', 'model', 'status', 'code'],
    registry: this.registry,
  });
  private readonly duration = new FastHistogram({
    name: 'kvroute_request_duration_seconds',
    help: 'End to end: from request arrival to the whole answer sent (a JSON body, or the end of a stream), for requests answered 200, by route, model and stream',
    labelNames: ['route', 'model', 'stream'],
    buckets: LATENCY_BUCKETS_S,
    registry: this.registry,
  });
  private readonly ttft = new FastHistogram({
    name: 'kvroute_time_to_first_token_seconds',
    help: 'Time from request arrival to the first streamed token chunk',
    labelNames: ['route', 'model'],
    buckets: LATENCY_BUCKETS_S,
    registry: this.registry,
  });
  private readonly itl = new FastHistogram({
    name: 'kvroute_inter_token_latency_seconds',
    help: 'Time between consecutive streamed token chunks',
    labelNames: ['route', 'model'],
    buckets: LATENCY_BUCKETS_S,
    registry: this.registry,
  });
  private readonly tpot = new FastHistogram({
    name: 'kvroute_time_per_output_token_seconds',
    help: 'Per stream answered 200: time from its first token chunk to its last, over its output tokens after the first (usage.completion_tokens, else token chunks)',
    labelNames: ['route', 'model'],
    buckets: TOKEN_BUCKETS_S,
    registry: this.registry,
  });
  private readonly inputTokens = new FastCounter({
    name: 'kvroute_input_tokens_total',
    help: 'Prompt tokens of routed requests',
    registry: this.registry,
  });
  private readonly outputTokens = new FastCounter({
    name: 'kvroute_output_tokens_total',
    help: 'Generated tokens reported by engines (usage.completion_tokens)',
    registry: this.registry,
  });
  private readonly cachedTokens = new FastCounter({
    name: 'kvroute_cached_tokens_total',
    help: 'Prompt tokens engines served from their prefix cache (usage.prompt_tokens_details.cached_tokens)',
    registry: this.registry,
  });
  private readonly hitRate = new FastHistogram({
    name: 'kvroute_kv_hit_rate',
    help: "Per request: the router's predicted overlap (cached tokens / prompt tokens) on the chosen worker",
    labelNames: ['pool'],
    buckets: RATIO_BUCKETS,
    registry: this.registry,
  });
  private readonly overhead = new FastHistogram({
    name: 'kvroute_routing_overhead_microseconds',
    help: 'Routing decision time by phase (hash, match, select, total)',
    labelNames: ['phase'],
    buckets: OVERHEAD_BUCKETS_US,
    registry: this.registry,
  });
  private readonly frontendOverhead = new FastHistogram({
    name: 'kvroute_frontend_overhead_microseconds',
    help: 'Router time from request arrival to the engine request (parse, preprocess, route)',
    buckets: OVERHEAD_BUCKETS_US,
    registry: this.registry,
  });
  private readonly offThread = new FastCounter({
    name: 'kvroute_preprocess_off_thread_total',
    help: 'Request bodies read, rendered and tokenized on a libuv thread (at least offThreadPromptBytes long) instead of the event loop',
    registry: this.registry,
  });
  private readonly refusals = new Counter({
    name: 'kvroute_backpressure_refusals_total',
    help: 'Requests refused with 429 because queued prefill work passed its cap',
    registers: [this.registry],
  });
  private readonly modes = new FastCounter({
    name: 'kvroute_requests_served_total',
    help: 'Requests served, by mode (aggregated, disaggregated, fallback: aggregated after a failed prefill)',
    labelNames: ['mode'],
    registry: this.registry,
  });
  private readonly aborted = new Counter({
    name: 'kvroute_client_disconnects_total',
    help: 'Requests whose client went away before the response ended',
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: 'kvroute_router_queue_wait_seconds',
    help: 'Time requests waited in the router queue before their turn, by pool',
    labelNames: ['pool'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  private readonly queueRejections = new Counter({
    name: 'kvroute_router_queue_rejections_total',
    help: 'Requests that left the router queue without their turn, by pool and reason: queue_full_requests, queue_full_tokens, displaced, wait_too_long, expired (429), client_gone',
    labelNames: ['pool', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly keyRequests = new Counter({
    name: 'kvroute_api_key_requests_total',
    help: "Requests with an API key, by the key's name and result (admitted, rate_limited_requests, rate_limited_tokens, too_large)",
    labelNames: ['key', 'result'] as const,
    registers: [this.registry],
  });
  private readonly retries = new Counter({
    name: 'kvroute_leg_retries_total',
    help: 'Legs sent to another worker because their engine never got them, by pool, the worker they failed on and why (engine_unreachable, engine_connect_timeout)',
    labelNames: ['pool', 'worker', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly ejections = new Counter({
    name: 'kvroute_worker_ejections_total',
    help: 'Workers taken out of selection after consecutive failures (outlier detection), by pool, worker and reason (connect_failure, server_error)',
    labelNames: ['pool', 'worker', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly keyTokens = new Counter({
    name: 'kvroute_api_key_tokens_total',
    help: "Tokens charged to an API key's token rate limit (prompt + max_tokens of admitted requests), by the key's name",
    labelNames: ['key'] as const,
    registers: [this.registry],
  });

  /** Sync lag of one received replica batch, in seconds. */
  readonly replicaSyncLag: (seconds: number) => void;

  constructor() {
    processMetrics();
    const self = this;
    this.replicaSyncLag = registerReplicaMetrics(this.registry, () => self.sources?.replicaStats?.());
    registerWarmStartMetrics(this.registry, () => self.sources?.warmStartStats?.());
    registerDiscoveryMetrics(this.registry, () => self.sources?.discoveryStats?.());
    registerTokenizerCacheMetrics(this.registry, () => self.sources?.tokenizerCache?.());
    const perWorker = (name: string, help: string, pick: (s: WorkerLoadSample) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['pool', 'worker', 'dp_rank'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const s of self.sources?.workerLoads() ?? []) {
            this.set({ pool: s.pool, worker: String(s.worker), dp_rank: String(s.dpRank) }, pick(s));
          }
        },
      });
    perWorker('kvroute_worker_active_prefill_tokens', 'Booked prefill tokens per worker and dp rank', (s) => s.prefillTokens);
    perWorker('kvroute_worker_active_decode_blocks', 'Booked decode KV blocks per worker and dp rank', (s) => s.decodeBlocks);
    perWorker('kvroute_worker_active_requests', 'Booked requests per worker and dp rank', (s) => s.requests);

    new Gauge({
      name: 'kvroute_workers',
      help: 'Registered workers by role and state (healthy, unhealthy, draining)',
      labelNames: ['role', 'state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const w of self.sources?.workerStates() ?? []) {
          const key = `${w.role}\u0000${w.state}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        for (const [key, n] of counts) {
          const [role, state] = key.split('\u0000');
          this.set({ role, state }, n);
        }
      },
    });
    new Gauge({
      name: 'kvroute_indexed_blocks',
      help: 'KV blocks in the radix index, per pool',
      labelNames: ['pool'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of self.sources?.indexStats() ?? []) this.set({ pool: s.pool }, s.blocks);
      },
    });

    new Gauge({
      name: 'kvroute_indexed_lower_tier_blocks',
      help: 'KV blocks the workers hold on lower tiers (host memory, disk, external pools) in the index, per pool and tier',
      labelNames: ['pool', 'tier'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of self.sources?.indexStats() ?? []) {
          for (const [tier, n] of Object.entries(s.lowerTierBlocks ?? {})) this.set({ pool: s.pool, tier }, n);
        }
      },
    });

    const perWorkerCounter = (name: string, help: string, pick: (s: EventStatsSample) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['worker'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const s of self.sources?.eventStats() ?? []) this.inc({ worker: String(s.worker) }, pick(s));
        },
      });
    perWorkerCounter('kvroute_kv_events_applied_total', 'KV events applied to the index', (s) => s.applied);
    perWorkerCounter('kvroute_kv_events_lower_tier_total', 'KV events about lower tiers (CPU, disk, external) applied to the index', (s) => s.lowerTier ?? 0);
    perWorkerCounter(
      'kvroute_kv_event_stream_joins_total',
      'KV event stream connections joined (the first and each reconnect), counted once the probe of the replay buffer for batches sent before the subscription is over',
      (s) => s.joins,
    );
    perWorkerCounter('kvroute_kv_event_gaps_total', 'Sequence gaps in KV event streams', (s) => s.gaps);
    perWorkerCounter('kvroute_kv_event_replays_total', 'Replay requests sent after gaps', (s) => s.replays);
    perWorkerCounter('kvroute_kv_event_decode_errors_total', 'KV event messages that could not be decoded', (s) => s.decodeErrors);
    perWorkerCounter(
      'kvroute_kv_event_restarts_total',
      'Engine restarts seen in the event stream (sequence went back, or the replay buffer lost the last applied batch): blocks cleared',
      (s) => s.restarts,
    );
    new Gauge({
      name: 'kvroute_kv_event_block_size_mismatch',
      help: "1 for a worker whose KV events carry another block size than the router's: they are all refused and its cache earns no routing credit",
      labelNames: ['worker', 'engine_block_size', 'router_block_size'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of self.sources?.eventStats() ?? []) {
          const m = s.blockSizeMismatch;
          if (m) this.set({ worker: String(s.worker), engine_block_size: String(m.engineBlockSize), router_block_size: String(m.routerBlockSize) }, 1);
        }
      },
    });
    new Counter({
      name: 'kvroute_kv_events_rejected_total',
      help: 'KV events rejected by the index, by reason',
      labelNames: ['worker', 'reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of self.sources?.eventStats() ?? []) {
          for (const [reason, n] of Object.entries(s.rejected)) {
            if (n > 0) this.inc({ worker: String(s.worker), reason }, n);
          }
        }
      },
    });
    new Counter({
      name: 'kvroute_kv_events_skipped_total',
      help: 'KV events skipped on purpose, by reason: unknown_type (an event type the decoder does not know), other_group (a secondary KV cache group), other_medium (a medium not indexed)',
      labelNames: ['worker', 'reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of self.sources?.eventStats() ?? []) {
          for (const [reason, n] of Object.entries(s.skipped ?? {})) this.inc({ worker: String(s.worker), reason }, n);
        }
      },
    });
    new Gauge({
      name: 'kvroute_sessions',
      help: 'Sessions remembered by session affinity',
      registers: [this.registry],
      collect() {
        this.reset();
        const s = self.sources?.sessionStats?.();
        if (s) this.set(s.sessions);
      },
    });
    new Counter({
      name: 'kvroute_session_requests_total',
      help: "Requests with a session id, by result: hit (sent to the session's workers), bound (a new session), rebound (its worker could no longer serve)",
      labelNames: ['result'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const s = self.sources?.sessionStats?.();
        if (!s) return;
        const byResult = { hit: s.hits, bound: s.bound, rebound: s.rebound };
        for (const [result, n] of Object.entries(byResult)) this.inc({ result }, n);
      },
    });
    new Gauge({
      name: 'kvroute_worker_ejected',
      help: 'Workers out of selection now after consecutive failures (outlier detection): 1 per ejected worker',
      labelNames: ['pool', 'worker'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const e of self.sources?.ejectedWorkers?.() ?? []) this.set({ pool: e.pool, worker: String(e.worker) }, 1);
      },
    });
    new Gauge({
      name: 'kvroute_router_queue_depth',
      help: 'Requests waiting in the router queue, by pool and priority class',
      labelNames: ['pool', 'priority'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [pool, q] of Object.entries(self.sources?.queueStats?.() ?? {})) {
          this.set({ pool, priority: '0' }, 0);
          for (const p of q.byPriority) this.set({ pool, priority: String(p.priority) }, p.depth);
        }
      },
    });
    new Gauge({
      name: 'kvroute_router_queue_tokens',
      help: 'Uncached prompt tokens waiting in the router queue, by pool',
      labelNames: ['pool'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [pool, q] of Object.entries(self.sources?.queueStats?.() ?? {})) this.set({ pool }, q.tokens);
      },
    });
    new Counter({
      name: 'kvroute_mode_decisions_total',
      help: 'Serving mode decisions by reason (x-kvroute-mode-reason): no_prefill_workers, unconditional, prefill_pinned, above_cap, below_threshold, prefill_queue_longer, remote_prefill_pays, prefill_failed',
      labelNames: ['reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(self.sources?.modeReasons?.() ?? {})) if (n > 0) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'kvroute_fallbacks_to_aggregated_total',
      help: 'Requests served aggregated on the decode worker after their prefill leg failed',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(self.sources?.fallbacksToAggregated() ?? 0);
      },
    });
  }

  // Labelled series resolved once per label value: a request's updates look nothing up by name.
  private readonly ttftSeries = byRouteAndModel((route, model) => this.ttft.labels({ route, model }));
  private readonly itlSeries = byRouteAndModel((route, model) => this.itl.labels({ route, model }));
  private readonly tpotSeries = byRouteAndModel((route, model) => this.tpot.labels({ route, model }));
  private readonly durationSeries = {
    streamed: byRouteAndModel((route, model) => this.duration.labels({ route, model, stream: 'true' })),
    json: byRouteAndModel((route, model) => this.duration.labels({ route, model, stream: 'false' })),
  };
  private readonly hitRateByPool = new ChildCache<HistogramSeries>((pool) => this.hitRate.labels({ pool }));
  private readonly modeSeries = new ChildCache<CounterSeries>((mode) => this.modes.labels({ mode }));
  /** Per route, per model, per status code. */
  private readonly requestSeries = new ChildCache(
    (route) => new ChildCache((model) => new ChildCache<CounterSeries>((status) => this.requests.labels({ route, model, status }))),
  );
  private readonly overheadByPhase = {
    hash: this.overhead.labels({ phase: 'hash' }),
    match: this.overhead.labels({ phase: 'match' }),
    select: this.overhead.labels({ phase: 'select' }),
    total: this.overhead.labels({ phase: 'total' }),
  };

  /** Connects the scrape-time readers (the router does this once it is assembled). */
  attach(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** A request answered; `model` empty for the routes that serve none (/health, /v1/models, ...). */
  request(route: string, status: number, model = ''): void {
    this.requestSeries.of(route).of(model).of(String(status)).inc();
  }

  /** A request answered with an OpenAI error (its code), besides request(). Errors are rare: prom-client's labels do. */
  error(route: string, model: string, status: number, code: string): void {
    this.errors.labels({ route, model, status: String(status), code }).inc();
  }

  /** A request answered 200, `seconds` after it arrived: its JSON body, or its stream's end. */
  answered(route: string, model: string, stream: boolean, seconds: number): void {
    (stream ? this.durationSeries.streamed : this.durationSeries.json).of(route).of(model).observe(seconds);
  }

  firstToken(route: string, model: string, seconds: number): void {
    this.ttftSeries.of(route).of(model).observe(seconds);
  }

  interToken(route: string, model: string, seconds: number): void {
    this.itlSeries.of(route).of(model).observe(seconds);
  }

  /** A stream's decode pace: seconds per output token after its first. */
  timePerOutputToken(route: string, model: string, seconds: number): void {
    this.tpotSeries.of(route).of(model).observe(seconds);
  }

  usage(promptTokens: number, completionTokens: number, cachedTokens: number): void {
    if (promptTokens > 0) this.inputTokens.inc(promptTokens);
    if (completionTokens > 0) this.outputTokens.inc(completionTokens);
    if (cachedTokens > 0) this.cachedTokens.inc(cachedTokens);
  }

  decision(pool: string, promptTokens: number, cachedTokens: number, timingsUs: RoutingTimingsUs): void {
    if (promptTokens > 0) this.hitRateByPool.of(pool).observe(Math.min(1, cachedTokens / promptTokens));
    this.overheadByPhase.hash.observe(timingsUs.hash);
    this.overheadByPhase.match.observe(timingsUs.match);
    this.overheadByPhase.select.observe(timingsUs.select);
    this.overheadByPhase.total.observe(timingsUs.total);
  }

  frontend(microseconds: number): void {
    this.frontendOverhead.observe(microseconds);
  }

  /** A request body was read off the event loop. */
  offThreadRead(): void {
    this.offThread.inc();
  }

  served(mode: string): void {
    this.modeSeries.of(mode).inc();
  }

  backpressureRefusal(): void {
    this.refusals.inc();
  }

  /** What happened in a pool's router queue. */
  queueEvent(pool: string, ev: QueueEvent): void {
    if (ev.type === 'dispatched') this.queueWait.labels({ pool }).observe(ev.waitMs / 1000);
    else if (ev.type === 'rejected') this.queueRejections.inc({ pool, reason: ev.reason });
    else if (ev.type === 'dropped') this.queueRejections.inc({ pool, reason: 'client_gone' });
  }

  clientDisconnect(): void {
    this.aborted.inc();
  }

  /** A leg failed on `worker` before its engine got it and was sent to another one. */
  legRetry(pool: string, worker: number, reason: string): void {
    this.retries.inc({ pool, worker: String(worker), reason });
  }

  /** A worker left selection after consecutive failures. */
  ejection(pool: string, worker: number, reason: string): void {
    this.ejections.inc({ pool, worker: String(worker), reason });
  }

  /** A request with an API key: admitted (charged `tokens`) or refused by the key's limits. */
  apiKeyRequest(key: string, result: string, tokens: number): void {
    this.keyRequests.inc({ key, result });
    if (tokens > 0) this.keyTokens.inc({ key }, tokens);
  }

  totals(): MetricsTotals {
    const ttftBuckets = new Float64Array(LATENCY_BUCKETS_S.length);
    let ttftCount = 0;
    for (const s of this.ttft.all()) {
      for (let i = 0; i < ttftBuckets.length; i++) ttftBuckets[i] += s.counts[i];
      ttftCount += s.count;
    }
    const hitRate: MetricsTotals['hitRate'] = {};
    for (const s of this.hitRate.all()) hitRate[s.labels.pool] = { sum: s.sum, count: s.count };
    let requests = 0;
    let errors = 0;
    for (const s of this.requests.all()) {
      if (s.labels.route !== '/v1/completions' && s.labels.route !== '/v1/chat/completions') continue;
      requests += s.value;
      if (!s.labels.status.startsWith('2')) errors += s.value;
    }
    const served: Record<string, number> = {};
    for (const s of this.modes.all()) served[s.labels.mode] = s.value;
    return { ttftBounds: LATENCY_BUCKETS_S, ttftBuckets, ttftCount, hitRate, requests, errors, served, reasons: { ...this.sources?.modeReasons?.() } };
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The router's metrics, then the process's (processMetrics(): one set per process, however many routers). */
  async render(): Promise<string> {
    const [own, proc] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${proc}`;
  }
}

/** Series resolved once per route, then per model. */
function byRouteAndModel(make: (route: string, model: string) => HistogramSeries): ChildCache<ChildCache<HistogramSeries>> {
  return new ChildCache((route) => new ChildCache((model) => make(route, model)));
}
